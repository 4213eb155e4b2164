"""Tiny shared state read on hot paths: Redis when REDIS_URL is set, else this process's memory.

Only counters and short-lived blobs live here (MCP sessions, rate windows, version stamps):
anything that must survive a Redis flush belongs in the database.

Counters (`incr`, `read_counter`) must be seen by every process, also in the embedded default,
where a shell (`mcp_import`, `mcp_enable`) changes what the running web process serves: there
they live in the database (`core.Counter`), read straight from the SQLite file on the hot path.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
import weakref
from typing import Any

import redis
import redis.asyncio as aioredis
from django.conf import settings
from django.db import transaction
from django.db.models import F
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry

from apps.core.threads import in_thread

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
_async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aioredis.Redis] = (
    weakref.WeakKeyDictionary()
)


def _options(*, asynchronous: bool) -> dict[str, Any]:
    # redis-py 8 defaults socket_timeout to 5 s: idle blocking reads must not time out.
    # After a Redis restart every pooled connection is dead: a command that meets one retries
    # once, at once, on a new connection (the caller sees nothing); a second failure is an outage.
    # The retry must be the client's own kind: given `redis.retry.Retry`, an asyncio client's
    # `call_with_retry` returns the command's coroutine unawaited, its error escapes the retry
    # loop and nothing is ever retried. Each dead pooled connection then failed one request with
    # a 503 whenever load reached it — the pool is LIFO, so a deep one only seconds after Redis
    # was back (the flake of tests/gateway/test_redis_outage.py).
    retry: Retry | AsyncRetry = (
        AsyncRetry(NoBackoff(), 1) if asynchronous else Retry(NoBackoff(), 1)
    )
    return {
        "socket_timeout": None,
        "socket_connect_timeout": 2,
        "health_check_interval": 30,
        "retry": retry,
        "retry_on_error": [redis.exceptions.ConnectionError],
    }


def sync_redis() -> redis.Redis | None:
    global _sync_client
    if not settings.REDIS_URL:
        return None
    if _sync_client is None:
        _sync_client = redis.Redis.from_url(settings.REDIS_URL, **_options(asynchronous=False))
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
            idle.remove(
                connection
            )  # no await between the check and here: no other task interleaves
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
            settings.REDIS_URL,
            max_connections=ASYNC_MAX_CONNECTIONS,
            timeout=ASYNC_WAIT_SECONDS,
            **_options(asynchronous=True),
        )
        client = _async_clients[loop] = aioredis.Redis(connection_pool=pool)
    return client


class MemoryStore:
    """The embedded default's stand-in for the few Redis commands the hub uses (thread-safe)."""

    SWEEP_EVERY = (
        1024  # writes between two sweeps of expired keys (rate windows are never read again)
    )

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, tuple[object, float | None]] = {}
        self._writes = 0

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
            self._wrote()

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
            self._wrote()
            return int(value) + 1

    def _wrote(self) -> None:
        """Called holding the lock: every SWEEP_EVERY writes, forget what has expired."""
        self._writes += 1
        if self._writes % self.SWEEP_EVERY == 0:
            now = time.monotonic()
            for key in [
                k
                for k, (_, expires) in self._values.items()
                if expires is not None and expires < now
            ]:
                del self._values[key]

    def count(self, prefix: str) -> int:
        """Live keys starting with `prefix` (SCAN MATCH prefix* in Redis terms)."""
        now = time.monotonic()
        with self._lock:
            return sum(
                1
                for key, (_, expires) in self._values.items()
                if key.startswith(prefix) and (expires is None or expires >= now)
            )


memory = MemoryStore()


def incr(key: str) -> int:
    """Bump a counter every process sees (Redis, or the database when embedded), from sync code."""
    client = sync_redis()
    return client.incr(key) if client is not None else _db_incr(key)


# INCR, and the expiry with the first count: one atomic round trip (EVALSHA).
_WINDOW_LUA = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return n
"""
_window_scripts: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def window(seconds: int) -> tuple[int, int]:
    """The current fixed window of `seconds` (rate limits): (its number, seconds until the next)."""
    now = int(time.time())
    return now // seconds, seconds - now % seconds


def count_in_window(key: str, seconds: int) -> tuple[int, int]:
    """Count one more for `key` in the current fixed window of `seconds` (the gateway's rate-limit
    scheme): (the count in this window so far, seconds until the next one). Redis, or this
    process's memory when embedded (one web process serves every request there)."""
    number, left = window(seconds)
    window_key = f"{key}:{number}"
    client = sync_redis()
    if client is None:
        return memory.incr(window_key, ttl=seconds + 1), left
    script = _window_scripts.get(client)
    if script is None:
        script = _window_scripts[client] = client.register_script(_WINDOW_LUA)
    return int(script(keys=[window_key], args=[seconds + 1])), left


def _db_incr(key: str) -> int:
    from apps.core.models import Counter

    with transaction.atomic():
        Counter.objects.get_or_create(key=key)
        Counter.objects.filter(key=key).update(value=F("value") + 1)
        return Counter.objects.values_list("value", flat=True).get(key=key)


def counter(key: str) -> int:
    """A counter bumped by `incr`, read from sync code: Redis, else the database (0 if never bumped)."""
    client = sync_redis()
    if client is not None:
        return int(client.get(key) or 0)
    reader = _sqlite_reader()
    rows = reader.read(key=key) if reader is not None else _orm_counters(key, "")
    return rows.get(key, 0)


async def read_counter(key: str) -> int | None:
    """A counter's value in the embedded default (None if never bumped); Redis callers read their own."""
    rows = await read_counters(key=key)
    return rows.get(key)


async def read_counters(*, key: str = "", prefix: str = "") -> dict[str, int]:
    """One counter (`key`) or all whose key starts with `prefix`, from the database."""
    reader = _sqlite_reader()
    if reader is not None:
        return reader.read(key=key, prefix=prefix)
    return await in_thread(_orm_counters)(key, prefix)


def _orm_counters(key: str, prefix: str) -> dict[str, int]:
    from apps.core.models import Counter

    rows = (
        Counter.objects.filter(key=key) if key else Counter.objects.filter(key__startswith=prefix)
    )
    return dict(rows.values_list("key", "value"))


class SqliteCounterReader:
    """Reads counters straight from the SQLite file, on the calling thread (the event loop).

    A primary-key read on a local file costs a few microseconds; handing it to a thread would
    cost more than the read. A read the file refuses for a moment (a writer committing) returns
    the last value seen instead of blocking the loop.
    """

    SQL_KEY = "SELECT key, value FROM core_counter WHERE key = ?"
    SQL_PREFIX = "SELECT key, value FROM core_counter WHERE key >= ? AND key < ?"

    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()
        self._last: dict[str, int] = {}

    def read(self, *, key: str = "", prefix: str = "") -> dict[str, int]:
        sql, args = (
            (self.SQL_KEY, (key,)) if key else (self.SQL_PREFIX, (prefix, prefix + "\uffff"))
        )
        try:
            rows = dict(self._connection().execute(sql, args).fetchall())
        except sqlite3.Error:
            return {
                k: v
                for k, v in self._last.items()
                if k == key or (not key and k.startswith(prefix))
            }
        self._last.update(rows)
        return rows

    def _connection(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            # Read-only, autocommit (each read sees the latest commit), never waiting on a writer.
            uri = f"file:{self.path}?mode=ro"
            connection = self._local.connection = sqlite3.connect(
                uri, uri=True, timeout=0, isolation_level=None
            )
        return connection


_readers: dict[str, SqliteCounterReader] = {}


def _sqlite_reader() -> SqliteCounterReader | None:
    database = settings.DATABASES[
        "default"
    ]  # the connection's own dict, without its thread-local lookup
    if not database["ENGINE"].endswith("sqlite3"):
        return None
    path = str(database["NAME"])  # read each time: tests switch to their own database file
    reader = _readers.get(path)
    if reader is None:
        reader = _readers[path] = SqliteCounterReader(path)
    return reader
