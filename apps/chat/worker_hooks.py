"""A Celery worker's hooks for its runs and chat turns (connected by mcphub/celery.py, before Django
is set up: everything else is imported when a signal fires)."""

from __future__ import annotations

import asyncio
from typing import Any


def _worker_ready(sender: Any = None, **_: Any) -> None:
    import threading

    from apps.chat import healing, runtime
    from apps.chat.tasks import execute_run, run_turn

    healing.start()
    if _consumes_chat_tasks(sender):
        runtime.take_handed_off(run_turn, execute_run)
    threading.Thread(target=_preload_in_thread, name="llm-preload", daemon=True).start()
    asyncio.run_coroutine_threadsafe(healing.sweep_forever(), runtime.current_loop())


def _consumes_chat_tasks(consumer: Any) -> bool:
    """Whether this worker (`worker_ready`'s sender) takes the queue turns and runs are sent to: web
    processes then hand them to it on their links too. A worker started for other queues only
    (`-Q mcp`) refuses them there, and they go by Celery to one that takes them."""
    from django.conf import settings

    amqp = getattr(getattr(consumer, "app", None), "amqp", None)
    return amqp is None or settings.CELERY_TASK_DEFAULT_QUEUE in amqp.queues.consume_from


def _preload_in_thread() -> None:
    from django.db import connection

    from apps.chat.preload import preload_sdks
    from apps.core import heap

    try:
        preload_sdks()
    finally:
        connection.close()  # this thread's own: it ends here
    heap.settle()  # the worker has loaded what it keeps: Django, the tasks, the pool, the SDKs


def _worker_shutting_down(**_: Any) -> None:
    from django.conf import settings

    from apps.chat import healing

    healing.drain_from_thread(settings.MCPHUB_RUN_DRAIN_SECONDS)


def connect(app: Any) -> None:
    """Keep leases and take over lost work once ready; drain and hand over on SIGTERM."""
    from celery import signals

    signals.worker_ready.connect(_worker_ready, weak=False)
    signals.worker_shutting_down.connect(_worker_shutting_down, weak=False)
