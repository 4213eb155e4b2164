"""Embedded default: Celery beat's schedule, run on the web process's own event loop.

With REDIS_URL, `celery beat` runs CELERY_BEAT_SCHEDULE; without it there is no beat process, so
the one web process runs the same entries itself (tasks execute in a thread, as Celery would).
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.conf import settings

logger = logging.getLogger(__name__)


def _interval(schedule: object) -> float | None:
    if isinstance(schedule, (int, float)):
        return float(schedule)
    if isinstance(schedule, timedelta):
        return schedule.total_seconds()
    return None  # crontab and friends: only `celery beat` runs those


async def run_schedule(schedule: dict | None = None) -> None:
    from mcphub.celery import app

    # A web process imports no task module by itself; Celery's own beat and worker load them
    # (autodiscovery) this way, so the schedule finds every task by name.
    await sync_to_async(app.loader.import_default_modules, thread_sensitive=False)()
    entries = {
        name: (entry["task"], _interval(entry["schedule"]))
        for name, entry in (schedule or settings.CELERY_BEAT_SCHEDULE).items()
    }
    entries = {name: (task, every) for name, (task, every) in entries.items() if every}
    logger.info(
        "schedule: %s", ", ".join(f"{task} every {every:g} s" for task, every in entries.values())
    )
    # As `celery beat` does, each entry first runs one interval after start: `./hub run` has just
    # discovered every server (and recorded its health) before serving.
    due = {name: time.monotonic() + every for name, (_, every) in entries.items()}
    while entries:
        now = time.monotonic()
        for name in [n for n, at in due.items() if at <= now]:
            task, every = entries[name]
            due[name] = now + every
            await _run(app, task)
        await asyncio.sleep(max(0.2, min(due.values()) - time.monotonic()))


async def _run(app, task: str) -> None:
    try:
        await sync_to_async(app.tasks[task].apply, thread_sensitive=False)()
    except Exception:  # noqa: BLE001 - one failing entry must not stop the schedule
        logger.exception("scheduled task %s failed", task)


_started = False


def start_once() -> None:
    """Start the schedule on the running event loop, once (the ASGI lifespan's startup)."""
    global _started
    if not _started and not settings.REDIS_URL and settings.MCPHUB_EMBEDDED_BEAT:
        _started = True
        asyncio.get_running_loop().create_task(run_schedule(), name="mcphub-embedded-beat")
