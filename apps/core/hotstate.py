"""Tiny shared state read on hot paths: Redis when REDIS_URL is set, else this process's memory.

Only counters and short-lived blobs live here (MCP sessions, rate windows, version stamps):
anything that must survive a Redis flush belongs in the database.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from typing import Any

import redis
import redis.asyncio as aioredis
from django.conf import settings
from redis.backoff import NoBackoff
from redis.retry import Retry

ASYNC_MAX_CONNECTIONS = 256
ASYNC_MAX_IDLE = 16
ASYNC_WAIT_SECONDS = 10.0

# Redis is unreachable (down, restarting, the link dropped): a request answers 503 + Retry-After.
# redis-py's errors, and the OS's for our own RESP client (`ConnectionError` covers refused/reset).
OUTAGE_ERRORS: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    ConnectionError,
)

_sync_client: redis.Redis | None = None
_async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aioredis.Redis] = weakref.WeakKeyDictionary()


def _options() -> dict:
    # redis-py 8 defaults socket_timeout to 5 s: idle blocking reads must not time out.
    # After a Redis restart every pooled connection is dead: a command that meets one retries
    # once, at once, on a new connection (the caller sees nothing); a second failure is an outage.
    return {
        "socket_timeout": None,
        "socket_connect_timeout": 2,
        "health_check_interval": 30,
        "retry": Retry(NoBackoff(), 1),
        "retry_on_error": [redis.exceptions.ConnectionError],
    }


def sync_redis() -> redis.Redis | None:
    global _sync_client
    if not settings.REDIS_URL:
        return None
    if _sync_client is None:
        _sync_client = redis.Redis.from_url(settings.REDIS_URL, **_options())
    return _sync_client


class _TrimmedPool(aioredis.BlockingConnectionPool):
    """A blocking pool that keeps at most ASYNC_MAX_IDLE connections open between bursts.

    redis-py never closes a pooled connection: one burst of concurrent requests (300 SSE
    streams opening at once) would leave as many idle sockets in this process and in Redis
    for good. The extra ones are closed as they are returned.
    """

    async def release(self, connection: Any) -> None:
        await super().release(connection)
        idle = self._available_connections
        if len(idle) > ASYNC_MAX_IDLE and connection in idle:
            idle.remove(connection)  # no await between the check and here: no other task interleaves
            await connection.disconnect()


def async_redis() -> aioredis.Redis | None:
    """The Redis client of the running event loop (connections belong to the loop that made them)."""
    if not settings.REDIS_URL:
        return None
    loop = asyncio.get_running_loop()
    client = _async_clients.get(loop)
    if client is None:
        # A burst of concurrent requests waits for a free connection instead of failing at
        # redis-py's default cap (100 connections raise MaxConnectionsError).
        pool = _TrimmedPool.from_url(
            settings.REDIS_URL, max_connections=ASYNC_MAX_CONNECTIONS, timeout=ASYNC_WAIT_SECONDS, **_options()
        )
        client = _async_clients[loop] = aioredis.Redis(connection_pool=pool)
    return client


class MemoryStore:
    """The embedded default's stand-in for the few Redis commands the hub uses (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, tuple[object, float | None]] = {}

    def get(self, key: str) -> object | None:
        with self._lock:
            value, expires = self._values.get(key, (None, None))
            if expires is not None and expires < time.monotonic():
                del self._values[key]
                return None
            return value

    def set(self, key: str, value: object, ttl: float | None = None) -> None:
        with self._lock:
            self._values[key] = (value, None if ttl is None else time.monotonic() + ttl)

    def delete(self, key: str) -> bool:
        with self._lock:
            return self._values.pop(key, None) is not None

    def incr(self, key: str, ttl: float | None = None) -> int:
        with self._lock:
            value, expires = self._values.get(key, (0, None))
            if expires is not None and expires < time.monotonic():
                value, expires = 0, None
            if expires is None and ttl is not None:
                expires = time.monotonic() + ttl
            self._values[key] = (int(value) + 1, expires)
            return int(value) + 1


memory = MemoryStore()


def incr(key: str) -> int:
    """Bump a counter, from sync code, wherever the hub keeps its hot state."""
    client = sync_redis()
    return client.incr(key) if client is not None else memory.incr(key)
