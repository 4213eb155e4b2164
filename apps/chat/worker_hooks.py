"""A Celery worker's hooks for its runs and chat turns (connected by mcphub/celery.py, before Django
is set up: everything else is imported when a signal fires)."""

from __future__ import annotations

import asyncio
from typing import Any


def _worker_ready(sender: Any = None, **_: Any) -> None:
    import threading

    from django.conf import settings

    from apps.chat import healing, runtime
    from apps.chat.tasks import execute_run, run_turn

    healing.start()
    # A web process hands turns and runs straight to a worker that runs their tasks' queue.
    queues = getattr(getattr(sender, "app", None), "amqp", None)
    if queues is None or settings.CELERY_TASK_DEFAULT_QUEUE in queues.queues.consume_from:
        runtime.take_handed_off(run_turn, execute_run)
    threading.Thread(target=_preload_in_thread, name="llm-preload", daemon=True).start()
    asyncio.run_coroutine_threadsafe(healing.sweep_forever(), runtime.current_loop())


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
