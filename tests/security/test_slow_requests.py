"""A client that sends less than it promised, or drips its request, is answered 408 within the
bound; one address cannot hold more than a few such requests at once. Against a real Daphne."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from tests.live_hub import free_port, hub_env, start_web, stop, wait_healthy

READ_TIMEOUT = 2
PER_CLIENT = 3


@pytest.fixture(scope="module")
def strict_hub(django_db_setup, tmp_path_factory) -> Iterator[int]:
    port = free_port()
    env = hub_env(
        MCPHUB_DATA_DIR=str(tmp_path_factory.mktemp("strict-data")),
        MCPHUB_REQUEST_READ_TIMEOUT=str(READ_TIMEOUT), MCPHUB_MAX_SLOW_REQUESTS_PER_CLIENT=str(PER_CLIENT),
    )
    process = start_web(port, env, tmp_path_factory.mktemp("strict-logs"), name="strict-web")
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
    b"Content-Length: 1000\r\n\r\n{\"jsonrpc\":"
)


def test_a_lying_content_length_is_answered_408_within_the_bound(strict_hub):
    started = time.monotonic()

    reply = answer(open_request(strict_hub, LYING))

    assert reply.startswith(b"HTTP/1.1 408")
    assert READ_TIMEOUT - 0.5 <= time.monotonic() - started <= READ_TIMEOUT + 2


def test_dripped_headers_are_answered_408_too(strict_hub):
    sock = open_request(strict_hub, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    started = time.monotonic()
    for _ in range(4):  # each byte restarts Twisted's idle timer, never ours
        time.sleep(0.6)
        try:
            sock.sendall(b"X")
        except OSError:
            break

    reply = answer(sock)

    assert reply.startswith(b"HTTP/1.1 408")
    assert time.monotonic() - started <= READ_TIMEOUT + 2


def test_one_address_holds_only_a_few_slow_requests_and_fast_ones_still_pass(strict_hub):
    slow = [open_request(strict_hub, LYING) for _ in range(PER_CLIENT)]
    time.sleep(0.3)

    refused = answer(open_request(strict_hub, LYING))
    for sock in slow:
        sock.close()
    time.sleep(0.3)
    fine = answer(open_request(strict_hub, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))

    assert refused.startswith(b"HTTP/1.1 429")
    assert fine.startswith(b"HTTP/1.1 200") or fine.startswith(b"HTTP/1.1 503")
