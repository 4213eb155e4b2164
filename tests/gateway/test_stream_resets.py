"""Clients that drop their SSE streams (TCP reset) leave nothing behind in the web process or Redis.

A hub of its own (web server + a Celery worker on a throwaway redis-server, so Redis's client
count is the hub's alone). Alice opens 300 GET streams at once and resets every connection; three times. Web fds and Redis
connections come back to a small bound above the baseline, the same after every round.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import struct
import sys

import pytest
import redis

from apps.catalog.models import McpServer
from apps.core.hotstate import ASYNC_MAX_IDLE
from apps.toolsets.services import enable_tools
from tests.live_hub import (
    INITIALIZE,
    SERVERS,
    free_port,
    start_private_hub,
    start_redis,
    stop,
)
from tests.waiting import eventually

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180), pytest.mark.django_db(transaction=True)]

STREAMS = 300
# What may stay open after a burst: the web process's Redis pool keeps up to ASYNC_MAX_IDLE idle
# connections (fds and Redis clients alike), plus a few lazily made ones.
BOUND = ASYNC_MAX_IDLE + 4


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def _request(port: int, method: str, path: str, headers: dict[str, str], body: bytes = b""):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
    await writer.drain()
    return reader, writer


async def _session(port: int, path: str, token: str) -> str:
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Connection": "close",
    }
    reader, writer = await _request(port, "POST", path, headers, json.dumps(INITIALIZE).encode())
    response = (await reader.read()).decode()
    writer.close()
    return next(
        line.split(":", 1)[1].strip()
        for line in response.split("\r\n")
        if line.lower().startswith("mcp-session-id:")
    )


async def _open(port: int, path: str, token: str, session: str) -> asyncio.StreamWriter:
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "text/event-stream",
        "Mcp-Session-Id": session,
    }
    reader, writer = await _request(port, "GET", path, headers)
    assert b"200" in await reader.readline()
    await reader.readuntil(b": open")  # the hub listens for the session's messages now
    return writer


def _reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()  # RST, as a client that crashed or lost its network


async def _reset_streams(port: int, path: str, token: str, sessions: list[str]) -> None:
    """All streams open at once, then every connection reset."""
    writers = await asyncio.gather(*(_open(port, path, token, s) for s in sessions))
    for writer in writers:
        _reset(writer)


@pytest.mark.parametrize("shape", ["production", "embedded"])
def test_300_reset_streams_return_fds_and_redis_connections_to_a_bound(
    shape, alice, alice_token, make_tool, tmp_path
):
    server = McpServer.objects.create(
        name="tiny", transport="stdio", command=sys.executable, args=[str(SERVERS / "tiny.py")]
    )
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=[make_tool(server, "echo")])
    redis_server = start_redis(port := free_port(), tmp_path) if shape == "production" else None
    url = f"redis://127.0.0.1:{port}/0" if redis_server else None
    hub = start_private_hub(tmp_path / "hub", redis_url=url)
    client = redis.Redis.from_url(url) if url else None
    try:
        web = hub.processes[0]
        web_port = int(hub.base_url.rsplit(":", 1)[1])
        sessions = asyncio.run(_sessions(web_port, endpoint.path, alice_token))
        for start in range(0, 20, 2):  # warm-up, two at a time: lazily made clients exist
            asyncio.run(
                _reset_streams(web_port, endpoint.path, alice_token, sessions[start : start + 2])
            )
        baseline = (_fds(web.pid), _redis_clients(client))

        rounds = []
        for _ in range(3):
            asyncio.run(_reset_streams(web_port, endpoint.path, alice_token, sessions))
            with contextlib.suppress(AssertionError):  # the assertion below reports every round
                eventually(
                    lambda: (
                        _fds(web.pid) <= baseline[0] + BOUND
                        and _redis_clients(client) <= baseline[1] + BOUND
                    ),
                    timeout=5.0,
                )
            rounds.append((_fds(web.pid), _redis_clients(client)))
    finally:
        if client is not None:
            client.close()
        stop(hub.processes)
        if redis_server is not None:
            redis_server.kill()
            redis_server.wait()

    report = f"baseline (fds, redis clients) {baseline}, after each round {rounds}"
    assert all(
        fds <= baseline[0] + BOUND and clients <= baseline[1] + BOUND for fds, clients in rounds
    ), report


async def _sessions(port: int, path: str, token: str) -> list[str]:
    return [
        await _session(port, path, token) for _ in range(STREAMS)
    ]  # one at a time: no pool growth yet


def _redis_clients(client: redis.Redis | None) -> int:
    if client is None:
        return 0  # embedded: no Redis
    return int(client.info("clients")["connected_clients"]) - 1  # less this test's own connection
