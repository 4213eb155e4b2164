"""The hot-path Redis client: pipelining, fire-and-forget, pub/sub, and what production Redis needs:
passwords and ACL users, TLS, a Redis that stops answering, a fail-over to a read-only replica.

Throwaway redis-servers (a password-protected one, a TLS one) keep the shared Redis out of it.
"""

import asyncio
import os
import time
import uuid

import pytest
import redis

from apps.connections.resp import (
    Address,
    RespClient,
    RespConnection,
    RespError,
    RespUnavailable,
    encode,
)
from tests.live_hub import free_port, make_tls_files, redis_tls_options, start_redis
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
REDIS_URL = os.environ.get("MCPHUB_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def test_encode():
    assert (
        encode(("SET", "k", 1.5, b"\xff"))
        == b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\n1.5\r\n$1\r\n\xff\r\n"
    )
    with pytest.raises(TypeError, match="cannot send NoneType"):
        encode(("SET", "k", None))


def test_urls():
    assert Address.from_url("redis://:pw@example:6380/15") == Address(
        "example", 6380, db=15, password="pw"
    )
    assert Address.from_url("redis://hub:p%40ss@example/2") == Address(
        "example", db=2, username="hub", password="p@ss"
    )
    assert Address.from_url("unix:///tmp/r.sock?db=2") == Address(path="/tmp/r.sock", db=2)
    assert "p@ss" not in repr(Address.from_url("redis://hub:p%40ss@example/2"))
    # redis-py's (and kombu's) TLS options; redis-py's socket options are accepted and ignored
    tls = Address.from_url(
        "rediss://:pw@cache.example:6380/0?ssl_cert_reqs=CERT_OPTIONAL&ssl_ca_certs=%2Fetc%2Fca.pem"
        "&ssl_certfile=/c.pem&ssl_keyfile=/k.pem&ssl_check_hostname=false&socket_timeout=5"
    )
    assert (
        tls.tls,
        tls.cert_reqs,
        tls.ca_certs,
        tls.certfile,
        tls.keyfile,
        tls.check_hostname,
    ) == (True, "optional", "/etc/ca.pem", "/c.pem", "/k.pem", False)
    assert (
        Address.from_url("rediss://cache.example").cert_reqs == "required"
    )  # verified by default, as redis-py
    for url, error in [
        ("redis://example/0?ssl_cert_reqs=none", "need a rediss://"),
        ("rediss://example/0?ssl_cert_reqs=maybe", "required, optional or none"),
        ("redis://example/0?sentinel=x", "unsupported Redis URL option"),
        ("http://example/0", "unsupported Redis URL scheme"),
        ("redis://example/zero", "must be numbers"),
    ]:
        with pytest.raises(ValueError, match=error):
            Address.from_url(url)


async def test_pipelined_commands_fire_and_pubsub():
    try:
        redis.Redis.from_url(REDIS_URL, socket_timeout=2).ping()
    except redis.RedisError:
        pytest.skip("Redis is not reachable")
    key, channel = f"resp-test:{uuid.uuid4().hex}", f"resp-test:{uuid.uuid4().hex}"
    received: list[bytes] = []
    sub = await RespConnection.open(REDIS_URL, on_push=lambda ch, data: received.append(data))
    await sub.subscribe(channel)
    client = RespClient(REDIS_URL)
    try:
        replies = await asyncio.gather(*(client.call("RPUSH", key, str(i)) for i in range(100)))
        assert replies == list(range(1, 101))  # in order, though sent in one write
        for i in range(5):
            await client.fire("PUBLISH", channel, f"m{i}")
        with pytest.raises(RespError):
            await client.call("NOSUCHCOMMAND")
        assert await client.call("LLEN", key) == 100  # the connection survives an error reply
        await eventually_async(lambda: len(received) >= 5, interval=0.01)
        assert received == [b"m0", b"m1", b"m2", b"m3", b"m4"]
    finally:
        await client.call("DEL", key)
        await client.aclose()
        sub.close()
        await sub.wait_closed()


# -- a password-protected Redis, with an ACL user ------------------------------------------


@pytest.fixture(scope="module")
def locked_redis(tmp_path_factory):
    """(port, admin client) of a redis-server with `requirepass` and an ACL user `hub`."""
    server = start_redis(
        port := free_port(), tmp_path_factory.mktemp("locked-redis"), "--requirepass", "s3cret:/@"
    )
    admin = redis.Redis(port=port, password="s3cret:/@")
    admin.execute_command("ACL", "SETUSER", "hub", "on", ">hub-pass", "~*", "&*", "+@all")
    admin.execute_command(
        "ACL", "SETUSER", "reader", "on", ">reader-pass", "~*", "&*", "+@read", "+ping"
    )
    try:
        yield port, admin
    finally:
        admin.close()
        server.kill()
        server.wait()


async def test_password_acl_user_and_database(locked_redis):
    port, admin = locked_redis
    for url in (
        f"redis://:s3cret%3A%2F%40@127.0.0.1:{port}/3",
        f"redis://hub:hub-pass@127.0.0.1:{port}/3",
    ):
        client = RespClient(url)
        key = f"resp-test:{uuid.uuid4().hex}"
        try:
            assert await client.call("RPUSH", key, "x") == 1
        finally:
            await client.aclose()
        assert (
            redis.Redis(port=port, password="s3cret:/@", db=3).lpop(key) == b"x"
        )  # SELECT 3 happened


async def test_refused_credentials_fail_fast_as_an_outage(locked_redis):
    port, _ = locked_redis
    cases = [
        (f"redis://:wrong@127.0.0.1:{port}/0", "refused AUTH: WRONGPASS"),
        (f"redis://hub:wrong@127.0.0.1:{port}/0", "refused AUTH: WRONGPASS"),
        (f"redis://127.0.0.1:{port}/0", "NOAUTH"),  # no password given: the first command says so
        (f"redis://reader:reader-pass@127.0.0.1:{port}/0", "NOPERM"),  # may not RPUSH
    ]
    for url, message in cases:
        client = RespClient(url)
        started = time.monotonic()
        try:
            with pytest.raises(RespUnavailable, match=message) as caught:
                await client.call("RPUSH", "resp-test:refused", "x")
        finally:
            await client.aclose()
        assert isinstance(
            caught.value, ConnectionError
        )  # what callers (and the gateway's 503) handle
        assert time.monotonic() - started < 1.0
        assert "wrong" not in str(caught.value) and "reader-pass" not in str(caught.value)
    # A subscriber refused the same way tells its opener instead of waiting for messages forever.
    conn = await RespConnection.open(f"redis://127.0.0.1:{port}/0")
    with pytest.raises(RespUnavailable, match="NOAUTH"):
        await asyncio.wait_for(conn.subscribe("resp-test:channel"), 2)
    conn.close()


async def test_a_redis_that_stops_answering_fails_the_waiting_commands_then_recovers(locked_redis):
    port, admin = locked_redis
    client = RespClient(f"redis://:s3cret%3A%2F%40@127.0.0.1:{port}/0", reply_timeout=0.5)
    try:
        assert await client.call("PING") == b"PONG"
        admin.execute_command(
            "CLIENT", "PAUSE", 6000, "ALL"
        )  # Redis reads nothing for 6 s (unless unpaused), then resumes
        started = time.monotonic()
        results = await asyncio.gather(
            *(client.call("INCR", "resp-test:paused") for _ in range(5)), return_exceptions=True
        )
        assert all(
            isinstance(r, ConnectionError) and "no reply within 0.5s" in str(r) for r in results
        ), results
        # The 0.5 s reply timeout (measured 0.50 s), not the pause: 6x margin, still under 6 s.
        assert time.monotonic() - started < 3.0
        admin.execute_command("CLIENT", "UNPAUSE")
        assert await client.call("PING") == b"PONG"  # a new connection
    finally:
        admin.execute_command("CLIENT", "UNPAUSE")
        await client.aclose()


async def test_a_read_only_replica_after_a_fail_over_drops_the_connection(locked_redis, tmp_path):
    port, _ = locked_redis
    replica = start_redis(replica_port := free_port(), tmp_path, "--replicaof", "127.0.0.1", str(port),
                          "--masterauth", "s3cret:/@")  # fmt: skip
    client = RespClient(f"redis://127.0.0.1:{replica_port}/0")
    try:
        with pytest.raises(RespUnavailable, match="READONLY"):
            await client.call("RPUSH", "resp-test:replica", "x")
        assert client._conn is not None and client._conn.closed  # the next command connects again
    finally:
        await client.aclose()
        replica.kill()
        replica.wait()


# -- TLS -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_redis(tmp_path_factory):
    """(port, TLS files) of a redis-server that speaks only TLS, with a password."""
    tmp = tmp_path_factory.mktemp("tls-redis")
    files = make_tls_files(tmp)
    port = free_port()
    server = start_redis(port, tmp, *redis_tls_options(port, files), "--requirepass", "tls-pass")
    try:
        yield port, files
    finally:
        server.kill()
        server.wait()


async def test_tls_verified_against_the_given_ca(tls_redis):
    port, files = tls_redis
    channel = f"resp-test:{uuid.uuid4().hex}"
    received: list[bytes] = []
    url = f"rediss://:tls-pass@127.0.0.1:{port}/0?ssl_ca_certs={files.ca}"
    sub = await RespConnection.open(url, on_push=lambda ch, data: received.append(data))
    await sub.subscribe(channel)
    client = RespClient(url)
    try:
        assert await client.call("PUBLISH", channel, "over tls") == 1
        await eventually_async(lambda: received, interval=0.01)
        assert received == [b"over tls"]
        assert (
            client._conn is not None
            and client._conn._transport.get_extra_info("ssl_object") is not None
        )
    finally:
        await client.aclose()
        sub.close()
    unverified = RespClient(f"rediss://:tls-pass@127.0.0.1:{port}/0?ssl_cert_reqs=none")
    try:
        assert await unverified.call("PING") == b"PONG"
    finally:
        await unverified.aclose()


async def test_tls_refuses_an_unknown_ca_and_plain_clients_fail_clearly(tls_redis):
    port, _ = tls_redis
    for url, message in [
        (
            f"rediss://:tls-pass@127.0.0.1:{port}/0",
            "CERTIFICATE_VERIFY_FAILED",
        ),  # the system CAs do not know it
        (
            f"redis://:tls-pass@127.0.0.1:{port}/0",
            "connection (lost|closed)",
        ),  # plain RESP to a TLS port
    ]:
        client = RespClient(url, connect_timeout=2.0)
        started = time.monotonic()
        try:
            with pytest.raises(ConnectionError, match=message):
                await client.call("PING")
        finally:
            await client.aclose()
        assert time.monotonic() - started < 3.0
