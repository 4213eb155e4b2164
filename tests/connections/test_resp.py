"""The hot-path Redis client: RESP parsing across fragments, pipelining, fire-and-forget, pub/sub."""

import asyncio
import os
import uuid

import pytest
import redis

from apps.connections.resp import Address, RespClient, RespConnection, RespError, _Incomplete, _parse, encode

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
REDIS_URL = os.environ.get("MCPHUB_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def test_parse_every_reply_kind_and_wait_for_the_rest():
    wire = b"+OK\r\n-ERR no\r\n:42\r\n$3\r\nabc\r\n$-1\r\n*2\r\n$1\r\nx\r\n*-1\r\n"
    values, pos = [], 0
    while pos < len(wire):
        value, pos = _parse(bytearray(wire), pos)
        values.append(value)
    assert values[:3] == [b"OK", values[1], 42] and isinstance(values[1], RespError)
    assert values[3:] == [b"abc", None, [b"x", None]]
    for cut in range(1, len(b"$3\r\nabc\r\n")):
        with pytest.raises(_Incomplete):
            _parse(bytearray(b"$3\r\nabc\r\n"[:cut]), 0)
    assert encode(("SET", "k", 1.5, b"\xff")) == b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\n1.5\r\n$1\r\n\xff\r\n"


def test_urls():
    assert Address.from_url("redis://:pw@example:6380/15") == Address("example", 6380, db=15, password="pw")
    assert Address.from_url("unix:///tmp/r.sock?db=2") == Address(path="/tmp/r.sock", db=2)


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
        for _ in range(100):
            if len(received) == 5:
                break
            await asyncio.sleep(0.01)
        assert received == [b"m0", b"m1", b"m2", b"m3", b"m4"]
    finally:
        await client.call("DEL", key)
        await client.aclose()
        sub.close()
        await sub.wait_closed()
