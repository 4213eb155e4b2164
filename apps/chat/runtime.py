"""Where turns run: one asyncio loop per process, so a process carries hundreds of turns at once.

Production: a web process hands a new turn or run to a worker (`hand_off`): over its direct link
to a pool worker, or as a Celery task; either way the worker's chat loop (a daemon thread started
on first use) runs it. Embedded (no REDIS_URL): the web process's own loop runs it, because the
in-memory channel layer only reaches consumers on that loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import uvloop

logger = logging.getLogger(__name__)

# Turns reach the ORM through the loop's default executor: with asyncio's default (cores + 4
# threads) a hundred turns queue behind six database calls at a time. Each thread may hold a
# database connection, so this also bounds the chat loop's connections.
DB_THREADS = 16

_lock = threading.Lock()
_web_loop: asyncio.AbstractEventLoop | None = None
_bound = False
_thread_loop: asyncio.AbstractEventLoop | None = None
_running: set[Future[None]] = set()
_handing: set[Future[None]] = set()  # hand_off: work on its way to a worker


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


def hand_off(task: Any, work_id: str) -> None:
    """Have a worker start `task(work_id)` (a turn's or a run's Celery task); returns at once.

    Production: sent on this process's direct link to a pool worker (`RemotePool.hand_off`), which
    starts it as the task would; when none takes it, `task.delay(work_id)`. Embedded: the task,
    eager, starts it on this process's loop. Called once the work is committed, on any thread.

    Celery's hop costs a turn's first token ~2.6 ms (the web's `delay()` ~1.0 ms of CPU, delivery
    ~1.0 ms, the worker's hand-over to its chat loop ~0.6 ms); the link, one message each way."""
    from django.conf import settings

    from apps.core import metrics

    if not settings.REDIS_URL:
        task.delay(work_id)
        metrics.handed_over(task.name, "celery")
        return
    future = asyncio.run_coroutine_threadsafe(_hand_off(task, work_id), _loop())
    _handing.add(future)
    future.add_done_callback(_handing.discard)


async def handed_off(timeout: float) -> None:
    """Until the work this process is handing over reached a worker, or `timeout` seconds: a web
    process stopping (its ASGI lifespan) answered for the work already, so it sends it first."""
    if _handing:
        await asyncio.wait([asyncio.wrap_future(f) for f in list(_handing)], timeout=timeout)


async def _hand_off(task: Any, work_id: str) -> None:
    from apps.connections.default import get_pool
    from apps.core import metrics

    try:
        if await get_pool().hand_off(task.name, work_id):
            metrics.handed_over(task.name, "link")
            return
    except Exception:  # boundary: Celery carries it instead
        logger.warning("could not hand %s %s to a pool worker", task.name, work_id, exc_info=True)
    try:
        await asyncio.get_running_loop().run_in_executor(None, task.delay, work_id)
        metrics.handed_over(task.name, "celery")
    except Exception:  # boundary: the lost work's sweep picks it up
        logger.exception("could not enqueue %s %s", task.name, work_id)


def take_handed_off(*tasks: Any) -> None:
    """This process's pool workers start these tasks' work when a web process hands it over
    (`hand_off`), as the tasks would; not once the process drains for a stop."""
    from apps.chat import lease
    from apps.connections.worker import take_work

    def taking(task: Any) -> Any:
        def take(work_id: str) -> bool:
            if lease.draining.is_set():
                return False
            task.run(work_id)
            return True

        return take

    for task in tasks:
        take_work(task.name, taking(task))
