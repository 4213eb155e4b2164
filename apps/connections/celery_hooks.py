"""Run a `PoolWorker` inside each Celery worker process, on its own thread and event loop.

Celery keeps the worker's lifecycle (start, stop, supervision); tool calls bypass Celery's
messaging (2-4 ms) and arrive on a direct link from the web process (link.py), or on the pool
worker's Redis inbox when there is none.

In `mcphub/celery.py`, after the app is configured:

    from apps.connections.celery_hooks import connect_pool_worker
    connect_pool_worker(app)
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from apps.connections.worker import PoolWorker

logger = logging.getLogger(__name__)

_STOP_TIMEOUT = 20.0


class PoolWorkerThread:
    """A daemon thread running one `PoolWorker` until `stop()`."""

    def __init__(self, redis_url: str, options: Mapping[str, Any]) -> None:
        self.redis_url = redis_url
        self.options = dict(options)
        self.worker: PoolWorker | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mcp-pool-worker", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        # uvloop, as the web processes: the worker's CPU per call goes mostly to the loop and its
        # writes (to stdio children, the reply PUBLISH); figures in the commit that made it so.
        import uvloop

        self._loop = uvloop.new_event_loop()
        # Imported here: mcphub.celery loads this module in every process, and the pool pulls in
        # the MCP SDK (~1.5 s) that only a worker needs.
        from apps.connections.pool import PoolOptions
        from apps.connections.worker import DEFAULT_PREFIX, PoolWorker

        prefix = self.options.get("redis_prefix", DEFAULT_PREFIX)
        self.worker = PoolWorker(
            self.redis_url,
            options=PoolOptions.from_mapping(self.options),
            prefix=prefix,
            listen=self.options.get("listen", "127.0.0.1:0") or "",
            advertise=self.options.get("advertise") or "",
        )
        self._ready.set()
        try:
            self._loop.run_until_complete(self.worker.run())
        finally:
            self._loop.close()

    def stop(self) -> None:
        """Stop taking calls, close every backend (killing stdio children), then return."""
        if self._loop is not None and self.worker is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self.worker.stop)
        self._thread.join(_STOP_TIMEOUT)


_current: PoolWorkerThread | None = None


def start_pool_worker(**_: Any) -> None:
    global _current
    from apps.connections.default import pool_settings

    redis_url, options = pool_settings()
    if not redis_url or _current is not None:
        return  # embedded mode: web processes hold their own in-process pool
    _current = PoolWorkerThread(redis_url, options)
    _current.start()


def stop_pool_worker(**_: Any) -> None:
    global _current
    if _current is not None:
        _current.stop()
        _current = None


def connect_pool_worker(app: Any) -> None:
    """Start a pool worker in every process that executes tasks, stop it on shutdown."""
    from celery import signals

    if (app.conf.worker_pool or "prefork") == "prefork":
        # Children, not the parent: a thread must never be running across fork().
        signals.worker_process_init.connect(start_pool_worker, weak=False)
        signals.worker_process_shutdown.connect(stop_pool_worker, weak=False)
    else:
        signals.worker_ready.connect(start_pool_worker, weak=False)
        signals.worker_shutdown.connect(stop_pool_worker, weak=False)
