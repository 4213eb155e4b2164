"""`get_pool()`: the pool this process should use, chosen from settings.

No `REDIS_URL`: the embedded default, an in-process `Pool` (backends are children of
this process). With `REDIS_URL`: a `RemotePool` (backends live in the pool workers).
One pool per event loop: connections and Redis sockets belong to the loop that made them.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from apps.connections.contract import PoolAPI
from apps.connections.pool import Pool, PoolOptions
from apps.connections.remote import RemotePool
from apps.connections.worker import DEFAULT_PREFIX

T = TypeVar("T")

_UNSET: Any = object()
_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, PoolAPI] = weakref.WeakKeyDictionary()


def pool_settings() -> tuple[str | None, Mapping[str, Any]]:
    """(REDIS_URL, MCPHUB_POOL) from Django settings, read lazily so the library needs no Django."""
    from django.conf import settings

    return getattr(settings, "REDIS_URL", None), getattr(settings, "MCPHUB_POOL", {}) or {}


def build_pool(redis_url: str | None, options: Mapping[str, Any]) -> PoolAPI:
    if redis_url:
        return RemotePool(
            redis_url,
            prefix=options.get("redis_prefix", DEFAULT_PREFIX),
            default_timeout=float(options.get("default_timeout", 60.0)),
            same_process=bool(options.get("same_process", True)),
        )
    return Pool(
        PoolOptions.from_mapping(options), on_notification=_hook(options.get("on_notification"))
    )


def _hook(path: str | None) -> Any:
    """The in-process pool's notification hook, named by dotted path (the library imports no app)."""
    if not path:
        return None
    from importlib import import_module

    module, _, name = path.rpartition(".")
    return getattr(import_module(module), name)


def get_pool(redis_url: str | None = _UNSET, options: Mapping[str, Any] | None = None) -> PoolAPI:
    """The pool for the running event loop (created on first use)."""
    loop = asyncio.get_running_loop()
    pool = _pools.get(loop)
    if pool is None:
        if redis_url is _UNSET:
            redis_url, configured = pool_settings()
            options = options if options is not None else configured
        pool = _pools[loop] = build_pool(redis_url, options or {})
    return pool


def run_with_pool(fn: Callable[[PoolAPI], Awaitable[T]]) -> T:
    """For sync code (Celery tasks, management commands): a short-lived pool, closed after."""

    async def run() -> T:
        redis_url, options = pool_settings()
        async with build_pool(redis_url, options) as pool:
            return await fn(pool)

    return asyncio.run(run())
