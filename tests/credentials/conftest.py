"""A shared stdio server and a shared HTTP server that take each user's own credentials.

Both are `tests/servers/whoami.py`: the stdio one reads `USER_TOKEN=${user:TOKEN}` from its
environment, the HTTP one gets `X-User-Token: ${user:TOKEN}` and `?key=${user:KEY}` on each
request, and its `whoami` tool answers what arrived, so a test sees whose values reached it.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from apps.catalog.introspection import apply_discovery
from apps.catalog.models import McpServer
from apps.connections.specs import ServerSpec
from tests.live_hub import HUB_PIDS, SERVERS, _accepts, free_port
from tests.waiting import eventually

STDIO_VARIABLES = [
    {
        "name": "TOKEN",
        "label": "Your API token",
        "help_text": "From your profile page.",
        "required": True,
    }
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def whoami_http_port() -> int:
    """The HTTP whoami server, one for the session (it keeps no state between requests)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVERS / "whoami.py"), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    HUB_PIDS.add(process.pid)  # a session-long helper: leak checks count only the pool's children
    try:
        _wait_listening(port)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)


def _wait_listening(port: int, timeout: float = 30.0) -> None:
    eventually(lambda: _accepts(port), timeout=timeout, what="the whoami HTTP server to start")


@pytest.fixture(scope="session")
def whoami_discovery(django_db_setup, whoami_http_port):
    """One real discovery (an in-process pool, no values needed), reused for every test's catalog."""
    from apps.connections.pool import Pool

    async def discover():
        async with Pool() as pool:
            return await pool.discover(
                ServerSpec(
                    name="wstdio",
                    command=sys.executable,
                    args=(str(SERVERS / "whoami.py"), "stdio"),
                )
            )

    return asyncio.run(discover())


@pytest.fixture
def stdio_server(transactional_db, whoami_discovery) -> McpServer:
    server = McpServer(
        name="wstdio",
        command=sys.executable,
        args=[str(SERVERS / "whoami.py"), "stdio"],
        env={"USER_TOKEN": "${user:TOKEN}", "LOG_LEVEL": "warning"},
        user_variables=STDIO_VARIABLES,
    )
    server.full_clean()
    server.save()
    apply_discovery(server=server, discovery=whoami_discovery)
    return server


@pytest.fixture
def http_server(transactional_db, whoami_discovery, whoami_http_port) -> McpServer:
    server = McpServer(
        name="whttp",
        transport=McpServer.Transport.STREAMABLE_HTTP,
        url=f"http://127.0.0.1:{whoami_http_port}/mcp?key=${{user:KEY}}",
        headers={"X-User-Token": "${user:TOKEN}"},
    )
    server.full_clean()
    server.save()
    apply_discovery(server=server, discovery=whoami_discovery)
    return server


@pytest.fixture
def _close_thread_connections():
    yield
    from asgiref.sync import SyncToAsync
    from django.db import connections

    SyncToAsync.single_thread_executor.submit(connections.close_all).result()
