"""A client that sends less than it promised, or drips its request, is answered 408 within the
bound; one address cannot hold more than a few such requests past half the bound, while many
ordinary requests half-arrived at once are all served. Against the real web server (mcphub/server.py)."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator

import pytest

from tests.live_hub import free_port, hub_env, start_web, stop, wait_healthy

READ_TIMEOUT = 4
SLOW_AFTER = READ_TIMEOUT / 2  # a request still arriving then counts against its address
PER_CLIENT = 3
HEALTH = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


@pytest.fixture(scope="module")
def strict_hub(django_db_setup, tmp_path_factory, healthy_needs) -> Iterator[int]:
    port = free_port()
    env = hub_env(
        MCPHUB_DATA_DIR=str(tmp_path_factory.mktemp("strict-data")),
        MCPHUB_REQUEST_READ_TIMEOUT=str(READ_TIMEOUT),
        MCPHUB_MAX_SLOW_REQUESTS_PER_CLIENT=str(PER_CLIENT),
    )
    process = start_web(port, env, tmp_path_factory.mktemp("strict-logs"), name="strict-web")
    try:
        wait_healthy(f"http://127.0.0.1:{port}", [process])
        yield port
    finally:
        stop([process])


@pytest.fixture(scope="module")
def proxied_strict_hub(django_db_setup, tmp_path_factory, healthy_needs) -> Iterator[int]:
    """The same bounds, behind one trusted proxy that appends to X-Forwarded-For."""
    port = free_port()
    env = hub_env(
        MCPHUB_DATA_DIR=str(tmp_path_factory.mktemp("proxied-strict-data")),
        MCPHUB_TRUSTED_PROXIES="1",
        MCPHUB_REQUEST_READ_TIMEOUT=str(READ_TIMEOUT),
        MCPHUB_MAX_SLOW_REQUESTS_PER_CLIENT=str(PER_CLIENT),
    )
    process = start_web(
        port, env, tmp_path_factory.mktemp("proxied-strict-logs"), name="proxied-strict-web"
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", [process])
        yield port
    finally:
        stop([process])


def open_request(port: int, data: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=READ_TIMEOUT + 5)
    sock.sendall(data)
    return sock


def answer(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    sock.close()
    return b"".join(chunks)


LYING = (
    b"POST /mcp/some-endpoint/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b'Content-Length: 1000\r\n\r\n{"jsonrpc":'
)


def test_a_lying_content_length_is_answered_408_within_the_bound(strict_hub):
    started = time.monotonic()

    reply = answer(open_request(strict_hub, LYING))

    assert reply.startswith(b"HTTP/1.1 408")
    assert READ_TIMEOUT - 0.5 <= time.monotonic() - started <= READ_TIMEOUT + 2


@pytest.mark.parametrize(
    "start", [b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n", LYING], ids=["headers", "body"]
)
def test_dripped_headers_or_body_are_answered_408_too(strict_hub, start):
    sock = open_request(strict_hub, start)
    started = time.monotonic()
    # Each byte would restart an idle timer, never ours; stop dripping once the hub has answered.
    while (
        time.monotonic() - started < READ_TIMEOUT + 1 and not select.select([sock], [], [], 0.5)[0]
    ):
        sock.sendall(b"X")

    reply = answer(sock)

    assert reply.startswith(b"HTTP/1.1 408")
    assert time.monotonic() - started <= READ_TIMEOUT + 2


def test_a_client_still_sending_after_the_408_reads_it_rather_than_a_reset(strict_hub):
    """The hub answers, then reads on until the client closes (a lingering close): closing at once
    under a client that is still sending resets the connection, and the reset drops the unread
    reply in the client's kernel."""
    sock = open_request(strict_hub, LYING)
    select.select([sock], [], [], READ_TIMEOUT + 2)  # the 408 has arrived, unread
    time.sleep(0.2)  # the hub has written all it will
    for _ in range(3):  # a closed socket answers the first with a reset, and the next one fails
        sock.sendall(b"more of the body, late")
        time.sleep(0.1)

    reply = answer(sock)

    assert reply.startswith(b"HTTP/1.1 408")


def test_one_address_holds_only_a_few_slow_requests_and_fast_ones_still_pass(strict_hub):
    slow = [open_request(strict_hub, LYING) for _ in range(PER_CLIENT)]
    time.sleep(0.3)
    one_more = open_request(
        strict_hub, LYING
    )  # turns slow 0.3 s after the others, with no slot left
    time.sleep(SLOW_AFTER + 0.2)

    refused_late = answer(one_more)
    refused_at_once = answer(open_request(strict_hub, LYING))  # while the address holds its slots
    for sock in slow:
        sock.close()
    time.sleep(0.3)
    fine = answer(open_request(strict_hub, HEALTH))

    assert refused_late.startswith(b"HTTP/1.1 429") and b"too_many_slow_requests" in refused_late
    assert refused_at_once.startswith(b"HTTP/1.1 429")
    assert fine.startswith((b"HTTP/1.1 200", b"HTTP/1.1 503"))


def test_many_requests_half_arrived_at_once_from_one_address_are_all_served(strict_hub):
    """What a single-threaded client starting many requests does: every request's headers first,
    then every body. None is slow, so none is refused."""
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    head = (
        b"POST /mcp/no-such-endpoint/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
    )
    socks = [open_request(strict_hub, head) for _ in range(PER_CLIENT * 5)]
    time.sleep(0.2)  # all of them half-arrived together, well within the bound
    for sock in socks:
        sock.sendall(body)

    replies = [answer(sock) for sock in socks]

    assert [reply.split(b"\r\n", 1)[0] for reply in replies] == [
        b"HTTP/1.1 401 Unauthorized"
    ] * len(socks)


def lying_from(client: str) -> bytes:
    return LYING.replace(
        b"Host: 127.0.0.1\r\n", b"Host: 127.0.0.1\r\nX-Forwarded-For: " + client.encode() + b"\r\n"
    )


def test_behind_a_trusted_proxy_slow_requests_count_per_client_not_per_proxy(proxied_strict_hub):
    slow = [open_request(proxied_strict_hub, lying_from("198.51.100.1")) for _ in range(PER_CLIENT)]
    time.sleep(0.3)
    same_client = open_request(proxied_strict_hub, lying_from("198.51.100.1"))
    other_client = open_request(proxied_strict_hub, lying_from("198.51.100.2"))

    refused, timed_out = answer(same_client), answer(other_client)
    for sock in slow:
        sock.close()

    assert refused.startswith(b"HTTP/1.1 429")
    assert timed_out.startswith(
        b"HTTP/1.1 408"
    )  # slow too, but the only one of its client: cut off at the bound
