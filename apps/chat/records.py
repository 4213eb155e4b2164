"""What a running turn records (sync: called through sync_to_async or the journal): its events,
its heartbeat and its end. The orchestrator, the event sink and recovery write through here;
services.py holds what a user asks for."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from apps.chat.journal import commit_without_waiting_for_disk
from apps.chat.models import Conversation, Event, Message, Turn
from apps.core.compiled import SAMPLE_TIME, CompiledUpdate, insert

# A running turn whose worker has not been heard of for this long was lost (worker crash).
STALE_AFTER = timedelta(seconds=60)
# A running turn reads its stop mark this often: the backstop for a stop message it missed.
STOP_CHECK_SECONDS = 15.0


def event_rows(conversation_id: uuid.UUID, events: list[dict[str, Any]]) -> list[Event]:
    return [
        Event(conversation_id=conversation_id, seq=e["seq"], type=e["type"], payload=e["payload"])
        for e in events
    ]


def save_events(conversation_id: uuid.UUID, events: list[dict[str, Any]]) -> None:
    insert(Event, event_rows(conversation_id, events))


def next_seq(conversation_id: uuid.UUID) -> int:
    return (
        Event.objects.filter(conversation_id=conversation_id).aggregate(m=Max("seq"))["m"] or 0
    ) + 1


def start(turn_id: uuid.UUID, worker: str, *, taken_over: bool = False) -> bool:
    """This worker runs the turn (its lease: apps.chat.lease); False when another has it. A new
    turn is started once; one taken over was claimed for this worker already."""
    if taken_over:
        return Turn.objects.filter(
            pk=turn_id, status=Turn.Status.RUNNING, worker=worker[:200]
        ).exists()
    return bool(_CLAIM.run(turn_id, worker[:200], timezone.now()))


# Compiled once (apps.core.compiled): on the path of every turn's first token, and of every
# journal write of one turn, the ORM's compilation of these UPDATEs cost more than running them.
_SAMPLE_WORKER = "sample-worker-9f3c"
_CLAIM = CompiledUpdate(
    lambda turn_id, worker, now: (
        Turn.objects.filter(
            pk=turn_id, status=Turn.Status.RUNNING, worker="", heartbeat_at__isnull=True
        ),
        {"worker": worker, "heartbeat_at": now},
    ),
    uuid.uuid4(),
    _SAMPLE_WORKER,
    SAMPLE_TIME,
)
_FENCE = CompiledUpdate(
    lambda turn_id, worker, now: (
        Turn.objects.filter(pk=turn_id, worker=worker),
        {"heartbeat_at": now},
    ),
    uuid.uuid4(),
    _SAMPLE_WORKER,
    SAMPLE_TIME,
)


class LeaseLost(Exception):
    """Another worker took the turn over (this one stalled past its lease): nothing more of the
    turn is stored here, and it is not ended here either."""


@dataclass(frozen=True)
class StillHeld:
    """The fence of every write of a turn's rows and events (inside the journal's transaction, as
    runs' `count_step`): the turn is still `worker`'s, or the write rolls back. The row stays
    locked until the write commits, so a claimant cannot take it over in between."""

    turn_id: uuid.UUID
    worker: str

    @classmethod
    def check(cls, fences: Sequence[StillHeld]) -> None:
        """Every fence of a journal batch in one UPDATE per worker. One UPDATE per write, as
        before, cost a burst of 100 streaming turns 36.8 ms of CPU and 55 ms of the journal's
        wall time per batch on Postgres; together, 4.9 and 8.7 ms (benchmarks/journal.py)."""
        by_worker: dict[str, set[uuid.UUID]] = {}
        for fence in fences:
            by_worker.setdefault(fence.worker[:200], set()).add(fence.turn_id)
        now = timezone.now()
        for worker, turn_ids in by_worker.items():
            if len(turn_ids) == 1:  # most batches: one turn's
                (turn_id,) = turn_ids
                if not _FENCE.run(turn_id, worker, now):
                    raise LeaseLost(turn_id)
                continue
            held = Turn.objects.filter(pk__in=turn_ids, worker=worker)
            if held.update(heartbeat_at=now) < len(turn_ids):
                raise LeaseLost(min(turn_ids - set(held.values_list("pk", flat=True))))


def opened(conversation_id: uuid.UUID, turn_id: uuid.UUID) -> bool:
    """Whether the turn's first event (the user's message) is stored: a turn taken over before its
    first write was fenced off sends it from its new worker."""
    return Event.objects.filter(
        conversation_id=conversation_id, type="user_message", payload__turn=str(turn_id)
    ).exists()


def made_progress(turn_id: uuid.UUID) -> None:
    """A turn taken over completed a round: its recoveries count again from none."""
    Turn.objects.filter(pk=turn_id).update(recoveries=0)


def progress(turn_id: uuid.UUID) -> tuple[int, int, int]:
    """A turn's stored rounds and tokens so far: (rounds, input tokens, output tokens)."""
    from django.db.models import Count, Sum

    totals = Message.objects.filter(turn_id=turn_id, role=Message.Role.ASSISTANT).aggregate(
        rounds=Count("id"), input=Sum("input_tokens"), output=Sum("output_tokens")
    )
    return totals["rounds"], totals["input"] or 0, totals["output"] or 0


def stop_requested(turn_id: uuid.UUID) -> bool:
    """Whether a stop was asked for the turn. One read: that the turn is alive is its lease's to
    say (apps.chat.lease renews every turn a process holds in one UPDATE a second); writing it here
    as well cost a transaction of five round trips per turn (benchmarks/chat.py)."""
    return Turn.objects.filter(pk=turn_id, stop_requested=True).exists()


def finish_turn(
    turn_id: uuid.UUID,
    status: str,
    error: str = "",
    *,
    rounds: int = 0,
    input_tokens: int = 0,
    output_tokens: int = 0,
    worker: str = "",
) -> None:
    """The turn's end and its totals (counted by the orchestrator: a round writes no turn row);
    with `worker`, only while the turn is still that worker's (else LeaseLost). Committed without
    waiting for the disk, as its events are: the WAL flush took 1-10 ms here, between the turn's
    last message and its `end` reaching the page."""
    with transaction.atomic():
        commit_without_waiting_for_disk()
        turns = Turn.objects.filter(pk=turn_id)
        if worker:
            turns = turns.filter(worker=worker[:200])
        ended = turns.update(
            status=status,
            error=error[:5000],
            finished_at=timezone.now(),
            rounds=rounds,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )
        if worker and not ended:
            raise LeaseLost(turn_id)
        Conversation.objects.filter(turns__id=turn_id).update(updated_at=timezone.now())
