"""Real backends for the catalog's live operations, in whichever mode the run is in.

Embedded (no REDIS_URL): operations called through `sync_to_async` from an async test find the
test's event loop, exactly as a sync view finds the server's, and use the pool of that loop.
With REDIS_URL: they go to the pool worker of a real hub (uvicorn + Celery worker), which also
runs the Celery tasks the tests enqueue.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import cache

from apps.catalog import operations
from apps.catalog.models import McpServer

SERVERS = Path(__file__).resolve().parent.parent / "servers"
REDIS_MODE = bool(settings.REDIS_URL)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def shared_pool(pool_host):
    """The pool of the test's event loop (what the embedded web process uses); closed after."""
    from apps.connections.default import get_pool

    pool = get_pool()
    yield pool
    await pool.aclose()


def tiny_args(*flags: str) -> list[str]:
    return ["-I", "-S", str(SERVERS / "tiny.py"), *flags]


def echo_args() -> list[str]:
    return [str(SERVERS / "echo.py"), "stdio"]


@pytest.fixture
def make_server(transactional_db) -> Callable[..., McpServer]:
    def make(name: str, args: list[str], **fields) -> McpServer:
        # The shared hub outlives each test's database: an earlier test's server of the same name
        # must not leave it a health baseline (its crashes would read as this one's).
        cache.delete(operations.FAILURES_KEY.format(name=name))
        return McpServer.objects.create(name=name, command=sys.executable, args=args, **fields)

    return make


@pytest.fixture(autouse=True)
def _close_thread_connections():
    """Async tests reach the ORM through asgiref's sync thread: close its connection afterwards."""
    yield
    from asgiref.sync import SyncToAsync
    from django.db import connections

    SyncToAsync.single_thread_executor.submit(connections.close_all).result()
