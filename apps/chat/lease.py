"""Leases on the work a process runs (autonomous runs and chat turns), after Temporal's activity
heartbeats: a process that dies loses its work to a live one within seconds, and nobody has to act.
What a process does with them (renew, take over, drain) is apps.chat.healing; this is the record.

A process renews every lease it holds each MCPHUB_RUN_HEARTBEAT_SECONDS, one UPDATE per kind
(`heartbeat_at`, fenced by `worker`). Work whose lease is older than MCPHUB_RUN_STALE_SECONDS lost
its process (SIGKILL, a crash, a host that hung) and is claimed by a live one, rows locked with SKIP
LOCKED so two claimants never take the same row; the claimant continues it from what is stored. A
process that finds a lease it held taken (it stalled past the stale time) drops that work quietly:
its claimant has it. Shutting down (SIGTERM), a process lets runs end their round, then hands what
it still holds over at once (`drain`). Work taken over MCPHUB_RUN_MAX_RECOVERIES times without
progress may be what kills its workers: it stops, with that reason.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from django.apps import apps as django_apps
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.chat.journal import commit_without_waiting_for_disk

logger = logging.getLogger(__name__)
WORKER = f"{socket.gethostname()}:{os.getpid()}"
RUNS, TURNS = "runs", "turns"
# Which rows of each kind hold a lease: a turn before its worker started it has no heartbeat yet
# (it waits in the broker's queue), and is never taken over.
# (Run.Status / Turn.Status values: the models import what runs them, so they are named here.)
ACTIVE = {RUNS: ("running", "waiting_approval", "waiting_input"), TURNS: ("running",)}
MODELS = {RUNS: "Run", TURNS: "Turn"}
# A released lease: old enough for any claimant at once.
RELEASED = timedelta(days=1)
CLAIM_BATCH = 50

_held: dict[str, dict[uuid.UUID, asyncio.Task[Any]]] = {RUNS: {}, TURNS: {}}
# Set once the process shuts down: it claims nothing more, and its runs stop at a round's end.
draining = asyncio.Event()


@contextmanager
def holding(kind: str, key: uuid.UUID) -> Iterator[None]:
    """The calling task runs `key` under this process's lease (renewed while inside)."""
    task = asyncio.current_task()
    assert task is not None
    _held[kind][key] = task
    try:
        yield
    finally:
        if _held[kind].get(key) is task:
            del _held[kind][key]


def held() -> dict[str, dict[uuid.UUID, asyncio.Task[Any]]]:
    """Per kind, the work this process holds and the task running each."""
    return {kind: dict(tasks) for kind, tasks in _held.items()}


def drop(kind: str, key: uuid.UUID) -> asyncio.Task[Any] | None:
    return _held[kind].pop(key, None)


def lost(kind: str, key: uuid.UUID) -> bool:
    """Another process took `key` over: the task running it here stops (it writes nothing more,
    its writes being fenced). False when this process did not hold it."""
    task = drop(kind, key)
    if task is None:
        return False
    logger.warning("lease: %s %s was taken over by another worker; dropped here", kind, key)
    task.cancel()
    return True


# -- the database side (sync: called through sync_to_async) -----------------------------------


def renew(held: dict[str, list[uuid.UUID]]) -> dict[str, set[uuid.UUID]]:
    """Renews this process's leases; returns, per kind, the work it lost (taken over or deleted)."""
    now, lost = timezone.now(), {}
    for kind, keys in held.items():
        if not keys:
            continue
        model = _model(kind)
        with transaction.atomic():
            commit_without_waiting_for_disk()
            renewed = model.objects.filter(pk__in=keys, worker=WORKER).update(heartbeat_at=now)
        if renewed < len(keys):
            mine = set(
                model.objects.filter(pk__in=keys, worker=WORKER).values_list("pk", flat=True)
            )
            lost[kind] = set(keys) - mine
    return lost


def claim(kind: str, *, limit: int = CLAIM_BATCH) -> tuple[list[uuid.UUID], list[uuid.UUID]]:
    """Work of `kind` whose lease expired: (now this process's, given up after too many recoveries).

    A lease its holder released (shutdown) is taken without counting as a recovery."""
    model = _model(kind)
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.MCPHUB_RUN_STALE_SECONDS)
    with transaction.atomic():
        rows = list(
            model.objects.select_for_update(skip_locked=True)
            .filter(status__in=ACTIVE[kind], heartbeat_at__lt=cutoff)
            .exclude(worker=WORKER)  # its own: it still runs it, its renewal was merely late
            .order_by("heartbeat_at")
            .values_list("pk", "recoveries", "worker")[:limit]
        )
        spent = [pk for pk, recoveries, worker in rows if worker and recoveries >= _max()]
        lost = [pk for pk, _, worker in rows if worker and pk not in spent]
        released = [pk for pk, _, worker in rows if not worker]
        fields: dict[str, Any] = {"worker": WORKER, "heartbeat_at": now}
        if kind == RUNS:  # the round is done again: its approvals and questions are asked again
            fields.update(status="running", pending_approvals=[], pending_input=[])
        model.objects.filter(pk__in=lost).update(recoveries=F("recoveries") + 1, **fields)
        model.objects.filter(pk__in=released).update(**fields)
    return lost + released, spent


def silent_since(cutoff: datetime) -> Q:
    """Work whose lease nobody renewed since `cutoff`, for the sweeps that end what no process is
    left to continue. A lease released at shutdown is dated RELEASED back so that a claimant takes
    it at once; it counts from its release, or a sweep between the release and the claim would end
    work a live process was about to continue."""
    return Q(heartbeat_at__lt=cutoff - RELEASED) | (Q(heartbeat_at__lt=cutoff) & ~Q(worker=""))


def release(kind: str, keys: list[uuid.UUID]) -> int:
    """This process's work goes to the next claimant at once (it shuts down)."""
    return (
        _model(kind)
        .objects.filter(pk__in=keys, worker=WORKER, status__in=ACTIVE[kind])
        .update(worker="", heartbeat_at=timezone.now() - RELEASED)
    )


def _model(kind: str) -> Any:
    return django_apps.get_model("chat", MODELS[kind])


def _max() -> int:
    return settings.MCPHUB_RUN_MAX_RECOVERIES
