"""Keeping a process's leases (apps.chat.lease) and healing the work of lost processes.

Every MCPHUB_RUN_HEARTBEAT_SECONDS the process renews the leases it holds, drops (quietly) work
another process took from it, and claims work whose lease went stale: a run continues from its last
stored step (apps.chat.runs.loop), a chat turn from its last stored round (apps.chat.orchestrator).
Runs on the loop that runs turns and runs: the Celery worker's chat loop (apps.chat.worker_hooks), or
embedded, the web process's own loop from the moment it serves (`start_on_web_loop`, from the
ASGI lifespan in mcphub/asgi.py, which also drains on SIGTERM). A worker also
sweeps what no worker is left to continue (even without beat), and on SIGTERM lets each run finish
its current round, then hands the rest over at once (`drain`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from django.conf import settings

from apps.chat import lease
from apps.chat.models import Turn
from apps.chat.orchestrator import run_turn
from apps.chat.preload import preload_sdks
from apps.chat.recovery import expire
from apps.chat.runs.loop import execute, publish_end
from apps.chat.runs.models import Run
from apps.chat.runs.services import interrupt
from apps.chat.tools import Toolbox
from apps.core.threads import in_thread

logger = logging.getLogger(__name__)
_started: set[asyncio.AbstractEventLoop] = set()
_continuing: set[asyncio.Task[None]] = set()
WARM_TIMEOUT = 30.0


async def _tick() -> None:
    keys = {kind: list(tasks) for kind, tasks in lease.held().items()}
    for kind, lost in (await in_thread(lease.renew)(keys)).items():
        for key in lost:
            lease.lost(kind, key)
    if lease.draining.is_set() or not settings.MCPHUB_RUN_TAKE_OVER:
        return
    for kind in (lease.RUNS, lease.TURNS):
        taken, spent = await in_thread(lease.claim)(kind)
        if spent:
            await _give_up(kind, spent)
        if taken:
            _keep(_warm(kind, taken))
        for key in taken:
            _continue(kind, key)
        if taken:
            logger.warning("lease: took over %d %s of a lost worker", len(taken), kind)


def _continue(kind: str, key: uuid.UUID) -> None:
    _keep(_continue_when_ready(kind, key))


async def _continue_when_ready(kind: str, key: uuid.UUID) -> None:
    # Claimed: this process's from now on, its lease renewed while the LLM SDKs finish loading.
    with lease.holding(kind, key):
        await _sdks_loaded()
    if kind == lease.RUNS:
        await execute(key, taken_over=True)
    else:
        await run_turn(key, taken_over=True)


_loading: dict[asyncio.AbstractEventLoop, asyncio.Future[None]] = {}


async def _sdks_loaded() -> None:
    """The SDKs of the providers in use imported, off the loop.

    A fresh process (a lost worker's replacement, or embedded the restarted web process) imports
    them for ~1.7 s of CPU (more on a loaded machine); the first turn or run taken over imported its
    SDK on the loop — or waited there on the import lock of the preloading thread — and froze
    every other one, lease renewals and the backends' warm-up with it (issue 27)."""
    loop = asyncio.get_running_loop()
    if loop not in _loading:
        _loading[loop] = asyncio.ensure_future(in_thread(preload_sdks)())
    await asyncio.shield(_loading[loop])


def _keep(work: Any) -> None:
    task = asyncio.ensure_future(work)
    _continuing.add(task)
    task.add_done_callback(_continuing.discard)


def _toolboxes(kind: str, keys: list[uuid.UUID]) -> set[tuple[int, int]]:
    """(owner, endpoint) of the work taken over."""
    if kind == lease.RUNS:
        rows = Run.objects.filter(pk__in=keys, endpoint__isnull=False)
        return set(rows.values_list("owner_id", "endpoint_id"))
    rows = Turn.objects.filter(pk__in=keys, conversation__endpoint__isnull=False)
    return set(rows.values_list("conversation__owner_id", "conversation__endpoint_id"))


async def _warm(kind: str, keys: list[uuid.UUID]) -> None:
    """Start the stdio backends of the work taken over while it reloads and asks its model again.

    A lost worker's replacement (or the live worker taking over) has a cold pool: the first call
    of each round waited for its backend's process start (~1.5 s of a ~4 s take-over on a loaded
    2-core machine, issue 27). A ping connects a backend the way the call would, so the call finds
    it started (or starting). HTTP backends connect in milliseconds and are left alone."""
    from apps.connections.default import get_pool

    try:
        specs = {}
        for owner, endpoint in await in_thread(_toolboxes)(kind, keys):
            view = (await Toolbox.load(owner, endpoint)).view
            for spec in view.specs.values() if view else ():
                if spec.transport == "stdio":
                    specs[(spec.name, spec.partition, spec.config_hash)] = spec
        pool = get_pool()
        await asyncio.gather(
            *(pool.ping(spec, timeout=WARM_TIMEOUT) for spec in specs.values()),
            return_exceptions=True,  # a backend that cannot start fails its call as it would have
        )
    except Exception as exc:  # noqa: BLE001 - a speed-up only: the calls start what they need
        logger.info("lease: warming the backends of taken-over work failed (%s)", exc)


async def _give_up(kind: str, keys: list[uuid.UUID]) -> None:
    reason = (
        f"Its worker was lost {settings.MCPHUB_RUN_MAX_RECOVERIES + 1} times in a row without completing a round "
        "(the work itself may be what stops them)"
    )
    if kind == lease.RUNS:
        for run in await in_thread(interrupt)(keys, f"{reason}: resume the run to try again."):
            await publish_end(run)
    else:
        await in_thread(lambda: expire(Turn.objects.filter(pk__in=keys)))()


async def keep_forever() -> None:
    while True:
        try:
            await _tick()
        except Exception as exc:  # noqa: BLE001 - the next tick tries again; one line, no traceback flood
            logger.warning("lease: renewing or claiming failed (%s: %s)", type(exc).__name__, exc)
        await asyncio.sleep(settings.MCPHUB_RUN_HEARTBEAT_SECONDS)


def start(loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Keep this process's leases and claim lost work, on the loop that runs turns and runs."""
    from apps.chat import runtime

    loop = loop or runtime.current_loop()
    if loop in _started:
        return
    _started.add(loop)
    asyncio.run_coroutine_threadsafe(keep_forever(), loop)


async def drain(seconds: float) -> None:
    """Shutting down: claim nothing more; give each run up to `seconds` to end its round (it then
    hands itself over); stop what is still running and hand it over, so a live process (or this
    one, restarted) continues it at once instead of after the stale time."""
    lease.draining.set()
    held = lease.held()
    if any(held.values()):
        logger.warning(
            "lease: shutting down with %d run(s) and %d turn(s): draining",
            len(held[lease.RUNS]),
            len(held[lease.TURNS]),
        )
    if runs := list(lease.held()[lease.RUNS].values()):
        await asyncio.wait(runs, timeout=seconds)
    stopping = {kind: dict(tasks) for kind, tasks in lease.held().items()}
    for tasks in stopping.values():
        for task in tasks.values():
            task.cancel()
    running = [task for tasks in stopping.values() for task in tasks.values()]
    if running:
        await asyncio.wait(running, timeout=5)
    for kind, tasks in stopping.items():
        if tasks and (handed := await in_thread(lease.release)(kind, list(tasks))):
            logger.warning("lease: %d %s handed over at shutdown", handed, kind)


def drain_from_thread(seconds: float) -> None:
    """`drain` on the chat loop, from another thread (Celery's shutdown signal)."""
    from apps.chat import runtime

    future = asyncio.run_coroutine_threadsafe(drain(seconds), runtime.current_loop())
    try:
        future.result(seconds + 10)
    except Exception:  # noqa: BLE001 - what is not handed over is claimed after the stale time
        logger.warning("lease: draining did not finish", exc_info=True)


def start_on_web_loop() -> None:
    from apps.chat import runtime

    if settings.REDIS_URL:
        return
    runtime.bind_web_loop()
    start(asyncio.get_running_loop())


# -- a Celery worker process -----------------------------------------------------------------------

SWEEP_SECONDS = 15.0


async def sweep_forever() -> None:
    from apps.chat.recovery import lost_turns
    from apps.chat.runs.services import sweep_lost_runs

    while True:
        await asyncio.sleep(SWEEP_SECONDS)
        try:
            if found := await in_thread(sweep_lost_runs)():
                logger.warning("runs: %d run(s) no worker took over marked interrupted", found)
            if ended := await in_thread(lambda: expire(lost_turns()))():
                logger.warning("chat: %d turn(s) no worker took over ended", len(ended))
        except Exception as exc:  # noqa: BLE001 - the next sweep tries again
            logger.warning("runs: sweeping lost runs and turns failed (%s)", exc)
