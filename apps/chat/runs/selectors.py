"""Permission-scoped reads of runs: a user sees only their own."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import QuerySet

from apps.chat.runs.models import Run, RunStep
from apps.core.compiled import Compiled


def runs_for(user) -> QuerySet[Run]:
    if not getattr(user, "is_authenticated", False):
        return Run.objects.none()
    return Run.objects.filter(owner=user).select_related("provider", "endpoint")


def _key(run_id: object) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(run_id))
    except ValueError:
        return None


def run_for(user, run_id: object) -> Run | None:
    """The user's run, or None (also for another user's: nothing to learn from the difference)."""
    key = _key(run_id)
    return None if key is None else runs_for(user).filter(pk=key).first()


# Compiled once (apps.core.compiled): every run socket opened reads these, and a hundred runs
# started and followed at once spent more of the web's CPU building and compiling these queries
# than on anything else of the socket.
_PROGRESS = Compiled(
    lambda owner_id, run_id: Run.objects.filter(owner_id=owner_id, pk=run_id).values(
        "id", "owner_id", "max_rounds", "rounds"
    ),
    2_000_000_011,
    uuid.uuid4(),
)


def run_progress(user, run_id: object) -> Run | None:
    """As run_for, reading only how far the run is (`rounds` of `max_rounds`), not a row that holds
    the whole task: what the run socket needs; its other fields load if asked for."""
    key = _key(run_id)
    if key is None or not getattr(user, "is_authenticated", False):
        return None
    return _PROGRESS.first_instance(Run, user.pk, key)


def steps_of(run: Run) -> QuerySet[RunStep]:
    return run.steps.order_by("round")


# -- the run socket's replay (numbering: apps.chat.runs.consumers) ---------------------------

# What the replay reads of the run row (not its task, which may be 100,000 characters).
STATE_FIELDS = (
    "status",
    "rounds",
    "answer",
    "error",
    "pending_approvals",
    "pending_input",
    "max_rounds",
)
STEP_FIELDS = (
    "round",
    "text",
    "reasoning",
    "finish_reason",
    "tool_calls",
    "input_tokens",
    "output_tokens",
    "context_chars",
)


def _event(kind: str, seq: int, payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "seq": seq, "payload": payload}


def step_events(run: Run, after: int, *, until: int | None = None) -> list[dict[str, Any]]:
    """Stored rounds `after` < round ≤ `until` as the `step` events the loop published for them."""
    if until is not None and until <= after:
        return []  # none can be stored (a page that opens as its run starts): no query
    rows = _STEPS.run(run.pk, after) if until is None else _STEPS_UNTIL.run(run.pk, after, until)
    return [_event("step", s["round"], {**s, "max_rounds": run.max_rounds}) for s in rows]


_STEPS = Compiled(
    lambda run_id, after: (
        RunStep.objects.filter(run_id=run_id, round__gt=after)
        .order_by("round")
        .values(*STEP_FIELDS)
    ),
    uuid.uuid4(),
    1_000_003,
)
_STEPS_UNTIL = Compiled(
    lambda run_id, after, until: (
        RunStep.objects.filter(run_id=run_id, round__gt=after, round__lte=until)
        .order_by("round")
        .values(*STEP_FIELDS)
    ),
    uuid.uuid4(),
    1_000_003,
    1_000_033,
)


def state_events(run: Run) -> list[dict[str, Any]]:
    """The run's state now, as the events that announced it: `end` once it finished,
    `approval_required` per call it waits on, else its `status`."""
    if run.status not in Run.ACTIVE:
        return [
            _event(
                "end",
                run.rounds,
                {
                    "status": run.status,
                    "answer": run.answer,
                    "error": run.error,
                    "rounds": run.rounds,
                },
            )
        ]
    waiting = [_event("approval_required", run.rounds, dict(c)) for c in run.pending_approvals]
    waiting += [_event("elicitation_required", run.rounds, dict(q)) for q in run.pending_input]
    if waiting:
        return waiting
    return [_event("status", run.rounds, {"status": run.status, "round": run.rounds})]


_STATE = Compiled(
    lambda run_id: Run.objects.filter(pk=run_id).values("id", *STATE_FIELDS), uuid.uuid4()
)


def replay(run_id: uuid.UUID, after: int) -> list[dict[str, Any]]:
    """Steps after `after`, then the state, as of one read of the run row. The row is read first and
    the steps only up to its `rounds` (a step and the count are committed together), so the state
    sent is never older than the last step sent; later steps come live. Nothing: the run is gone."""
    run = _STATE.first_instance(Run, run_id)
    if run is None:
        return []
    return [*step_events(run, after, until=run.rounds), *state_events(run)]
