"""Gateway tests run against the session's real hub (tests/conftest.py `hub`), with the echo server."""

from __future__ import annotations

import sys

import pytest

from apps.accounts.services import create_access_token
from apps.catalog.introspection import apply_discovery
from apps.catalog.models import McpServer
from apps.toolsets.services import enable_tools
from tests.live_hub import SERVERS


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


ECHO = {"name": "echo", "command": sys.executable, "args": [str(SERVERS / "echo.py"), "stdio"]}


@pytest.fixture(scope="session")
def echo_discovery(hub):
    """One real discovery of the echo server through the pool, reused by every test's catalog."""
    from apps.connections.default import run_with_pool

    spec = McpServer(**ECHO).to_spec()
    return run_with_pool(lambda pool: pool.discover(spec))


@pytest.fixture
def echo_server(transactional_db, echo_discovery) -> McpServer:
    """Our echo test server over stdio, in the catalog as discovery found it."""
    server = McpServer.objects.create(**ECHO)
    apply_discovery(server=server, discovery=echo_discovery)
    return server


@pytest.fixture
def alice_endpoint(alice, echo_server):
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=echo_server.tools.all())
    return endpoint


@pytest.fixture
def alice_hub_token(alice) -> str:
    return create_access_token(user=alice, name="gateway tests")[1]


@pytest.fixture(autouse=True)
def _close_thread_connections():
    """Async tests reach the ORM through asgiref's sync thread: close its connection afterwards,
    or the test database cannot be dropped at the end of the run."""
    yield
    from asgiref.sync import SyncToAsync
    from django.db import connections

    SyncToAsync.single_thread_executor.submit(connections.close_all).result()
