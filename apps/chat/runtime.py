"""Where turns run: one asyncio loop per process, so a process carries hundreds of turns at once.

Production: the Celery task hands the turn to this process's chat loop (a daemon thread started on
first use) and returns; the loop runs the turn. Embedded (no REDIS_URL): the web process's own loop
runs it, because the in-memory channel layer only reaches consumers on that loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import uvloop

# Turns reach the ORM through the loop's default executor: with asyncio's default (cores + 4
# threads) a hundred turns queue behind six database calls at a time. Each thread may hold a
# database connection, so this also bounds the chat loop's connections.
DB_THREADS = 16

_lock = threading.Lock()
_web_loop: asyncio.AbstractEventLoop | None = None
_bound = False
_thread_loop: asyncio.AbstractEventLoop | None = None
_running: set[Future[None]] = set()


def bind_web_loop() -> None:
    """Embedded only: turns started in this process run on the calling (ASGI server's) loop."""
    global _web_loop, _bound
    if _bound:  # called on every request: the first one decides
        return
    from django.conf import settings

    _bound = True
    if not settings.REDIS_URL:
        _web_loop = asyncio.get_running_loop()


def _loop() -> asyncio.AbstractEventLoop:
    global _thread_loop
    if _web_loop is not None and _web_loop.is_running():
        return _web_loop
    with _lock:
        if _thread_loop is None:
            _thread_loop = uvloop.new_event_loop()  # the loop the web process runs turns on
            _thread_loop.set_default_executor(
                ThreadPoolExecutor(DB_THREADS, thread_name_prefix="chat-db")
            )
            threading.Thread(target=_thread_loop.run_forever, name="chat-loop", daemon=True).start()
    return _thread_loop


def submit(work: Coroutine[Any, Any, None]) -> Future[None]:
    """Run `work` (a turn or a run) on this process's loop; the future ends with it."""
    future = asyncio.run_coroutine_threadsafe(work, _loop())
    _running.add(future)
    future.add_done_callback(_running.discard)
    return future


def running() -> int:
    return len(_running)


def current_loop() -> asyncio.AbstractEventLoop:
    """The loop turns and runs execute on in this process (started on first use)."""
    return _loop()
