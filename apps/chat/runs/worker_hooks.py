"""A Celery worker process and its runs: it sweeps lost runs and chat turns (so a SIGKILLed
worker's runs are marked interrupted, its queued runs handed over again and its turns ended with
an error their pages see, even without beat), and on SIGTERM lets each run finish its current round."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from asgiref.sync import sync_to_async

logger = logging.getLogger(__name__)
SWEEP_SECONDS = 15.0
DRAIN_SECONDS = 25.0


async def _sweep_forever() -> None:
    from apps.chat.recovery import expire, lost_turns
    from apps.chat.runs.services import sweep_lost_runs

    while True:
        try:
            if found := await sync_to_async(sweep_lost_runs, thread_sensitive=False)():
                logger.warning("runs: %d lost run(s) marked interrupted", found)
            if ended := await sync_to_async(lambda: expire(lost_turns()), thread_sensitive=False)():
                logger.warning("chat: %d turn(s) of a lost worker ended as interrupted", len(ended))
        except Exception:  # noqa: BLE001 - the next sweep tries again
            logger.exception("runs: sweeping lost runs and turns failed")
        await asyncio.sleep(SWEEP_SECONDS)


def start_sweeper(**_: Any) -> None:
    from apps.chat import runtime

    asyncio.run_coroutine_threadsafe(_sweep_forever(), runtime.current_loop())


def drain(**_: Any) -> None:
    """SIGTERM: no run starts another round; wait (bounded) until each has saved its current one."""
    from apps.chat import runtime
    from apps.chat.runs import loop

    runtime.current_loop().call_soon_threadsafe(loop.draining.set)
    deadline = time.monotonic() + DRAIN_SECONDS
    while loop.active() and time.monotonic() < deadline:
        time.sleep(0.1)
    if loop.active():
        logger.warning(
            "runs: %d run(s) still mid-round at shutdown; they will be found interrupted",
            loop.active(),
        )


def connect(app: Any) -> None:
    from celery import signals

    signals.worker_ready.connect(start_sweeper, weak=False)
    signals.worker_shutting_down.connect(drain, weak=False)
