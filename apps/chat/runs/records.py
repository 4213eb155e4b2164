"""What the worker running a run records (sync: called through sync_to_async): its claim, each
round's totals, approvals waited for, its heartbeat and its end. services.py holds what a user
asks for."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from apps.chat.journal import commit_without_waiting_for_disk
from apps.chat.runs.models import Run, RunStep
from apps.core.compiled import SAMPLE_TIME, Compiled, CompiledUpdate, attnames


@transaction.atomic
def claim(run_id: uuid.UUID, worker: str) -> Run | None:
    """Queued → running, for exactly one worker; None when there is nothing to run. Committed
    without waiting for the disk (as steps are): its own WAL flush cost 1-10 ms before round 1."""
    commit_without_waiting_for_disk()
    now = timezone.now()
    if not _CLAIM.run(run_id, worker[:200], now, now):
        return None
    return _WITH_PROVIDER.first_instance(Run, run_id, related=_RELATED)


# Compiled once (apps.core.compiled): a claim and each round's totals are on every run's path, and
# the ORM's compilation of these statements cost more than running them (claim 2.36 → 1.52 ms of
# the worker's CPU, a round's totals 0.85 → 0.29 ms, in process against Postgres).
_SAMPLE_WORKER = "sample-worker-7c1e"
_CLAIM = CompiledUpdate(
    lambda run_id, worker, now, start: (
        Run.objects.filter(pk=run_id, status=Run.Status.QUEUED, cancel_requested=False),
        {
            "status": Run.Status.RUNNING,
            "heartbeat_at": now,
            "worker": worker,
            "started_at": Coalesce("started_at", Value(start)),
        },
    ),
    uuid.uuid4(),
    _SAMPLE_WORKER,
    SAMPLE_TIME,
    SAMPLE_TIME + timedelta(seconds=1),
)
_RELATED = ("provider", "provider__owner", "endpoint")  # owner: Provider.public_only
_WITH_PROVIDER = Compiled(
    lambda run_id: Run.objects.filter(pk=run_id).values(*attnames(Run, *_RELATED)), uuid.uuid4()
)
_COUNT = CompiledUpdate(
    lambda run_id, worker, input_tokens, output_tokens, elapsed_s, now: (
        Run.objects.filter(pk=run_id, worker=worker),
        {
            "rounds": F("rounds") + 1,
            "input_tokens": F("input_tokens") + input_tokens,
            "output_tokens": F("output_tokens") + output_tokens,
            "elapsed_s": elapsed_s,
            "heartbeat_at": now,
            "recoveries": 0,
            "in_flight": None,
        },
    ),
    uuid.uuid4(),
    _SAMPLE_WORKER,
    1_000_003,
    1_000_033,
    123.456789,
    SAMPLE_TIME,
)


def taken_over(run_id: uuid.UUID, worker: str) -> Run | None:
    """A run this worker's lease claimed (apps.chat.lease); None if it moved on meanwhile."""
    return (
        Run.objects.select_related("provider__owner", "endpoint")
        .filter(pk=run_id, worker=worker[:200], status=Run.Status.RUNNING, cancel_requested=False)
        .first()
    )


def intend(run_id: uuid.UUID, in_flight: dict[str, Any]) -> None:
    """The round whose calls are about to be sent (see Run.in_flight)."""
    Run.objects.filter(pk=run_id).update(in_flight=in_flight)


class LeaseLost(Exception):
    """Another worker took the run over (this one stalled past its lease): its round is not kept."""


def count_step(step: RunStep, *, elapsed_s: float, worker: str) -> None:
    """The run's totals after `step` (run inside the journal's transaction that inserts the step).

    Like chat events, steps are committed without waiting for the WAL flush (journal.py): visible
    at once and safe from any worker crash; only a crash of Postgres itself could lose the last
    fraction of a second, and a resume then redoes that round. Waiting cost 6-8 ms of every round."""
    counted = _COUNT.run(
        step.run_id,
        worker[:200],
        step.input_tokens,
        step.output_tokens,
        float(elapsed_s),
        timezone.now(),
    )
    if not counted:  # fenced: rolls the step back with the journal's transaction
        raise LeaseLost(step.run_id)


def add_tokens(run_id: uuid.UUID, input_tokens: int, output_tokens: int) -> None:
    """Tokens spent outside a round (a backend's sampling answered by the run's owner's model)."""
    Run.objects.filter(pk=run_id).update(
        input_tokens=F("input_tokens") + input_tokens,
        output_tokens=F("output_tokens") + output_tokens,
    )


@transaction.atomic
def wait_for_approval(run_id: uuid.UUID, call: dict[str, Any]) -> None:
    run = Run.objects.select_for_update().get(pk=run_id)  # calls of one round ask at once
    if run.status in Run.ACTIVE:
        run.status, run.pending_approvals = (
            Run.Status.WAITING_APPROVAL,
            [*run.pending_approvals, call],
        )
        run.save(update_fields=["status", "pending_approvals"])


@transaction.atomic
def approval_answered(run_id: uuid.UUID, call_id: str) -> None:
    run = Run.objects.select_for_update().get(pk=run_id)
    if run.status in Run.ACTIVE:
        run.pending_approvals = [p for p in run.pending_approvals if p.get("id") != call_id]
        run.status = _waiting(run)
        run.save(update_fields=["status", "pending_approvals"])


@transaction.atomic
def wait_for_input(run_id: uuid.UUID, request: dict[str, Any]) -> None:
    run = Run.objects.select_for_update().get(pk=run_id)
    if run.status in Run.ACTIVE:
        run.pending_input = [*run.pending_input, request]
        run.status = _waiting(run)
        run.save(update_fields=["status", "pending_input"])


@transaction.atomic
def input_answered(run_id: uuid.UUID, request_id: str) -> None:
    run = Run.objects.select_for_update().get(pk=run_id)
    if run.status in Run.ACTIVE:
        run.pending_input = [p for p in run.pending_input if p.get("id") != request_id]
        run.status = _waiting(run)
        run.save(update_fields=["status", "pending_input"])


def _waiting(run: Run) -> str:
    if run.pending_approvals:
        return Run.Status.WAITING_APPROVAL
    return Run.Status.WAITING_INPUT if run.pending_input else Run.Status.RUNNING


def heartbeat(run_id: uuid.UUID) -> bool:
    """Marks the run alive; False once a cancel was requested. One query while it goes on."""
    if _HEARTBEAT.run(run_id, timezone.now()):
        return True
    return not Run.objects.filter(pk=run_id, cancel_requested=True).exists()


_HEARTBEAT = CompiledUpdate(
    lambda run_id, now: (
        Run.objects.filter(pk=run_id, status__in=Run.WORKING, cancel_requested=False),
        {"heartbeat_at": now},
    ),
    uuid.uuid4(),
    SAMPLE_TIME,
)


def note(run_id: uuid.UUID, text: str) -> None:
    """While it runs: why the run waits (the model provider's last error), or "" once it goes on."""
    Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).update(error=text[:5000])


@transaction.atomic
def finish(
    run_id: uuid.UUID,
    status: str,
    *,
    answer: str = "",
    error: str = "",
    elapsed_s: float | None = None,
) -> None:
    """The run's end (succeeded, incomplete, failed or cancelled), unless it stopped working
    meanwhile; `elapsed_s` None keeps the stored one. Committed without waiting for the disk, as
    its steps are (count_step)."""
    commit_without_waiting_for_disk()
    elapsed = None if elapsed_s is None else float(elapsed_s)
    _FINISH.run(run_id, status, answer, error[:5000], timezone.now(), elapsed)


# Compiled as the claim is: the ORM's compilation of this update was ~2.6 % of the worker's CPU
# while 100 runs ran (benchmarks/runs.py, py-spy), as was the heartbeat's.
_FINISH = CompiledUpdate(
    lambda run_id, status, answer, error, now, elapsed_s: (
        Run.objects.filter(pk=run_id, status__in=Run.WORKING),
        {
            "status": status,
            "answer": answer,
            "error": error,
            "finished_at": now,
            "elapsed_s": Coalesce(Value(elapsed_s), "elapsed_s"),
            "pending_approvals": [],
            "pending_input": [],
        },
    ),
    uuid.uuid4(),
    "sample-status-3f9a",
    "sample-answer-3f9a",
    "sample-error-3f9a",
    SAMPLE_TIME,
    98_765.4321,
)
