"""What a running turn records (sync: called through sync_to_async or the journal): its events,
its heartbeat and its end. The orchestrator, the event sink and recovery write through here;
services.py holds what a user asks for."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from apps.chat.journal import commit_without_waiting_for_disk
from apps.chat.models import Conversation, Event, Turn

# A running turn whose worker has not been heard of for this long was lost (worker crash).
STALE_AFTER = timedelta(seconds=60)
HEARTBEAT_SECONDS = 15.0


def event_rows(conversation_id: uuid.UUID, events: list[dict[str, Any]]) -> list[Event]:
    return [
        Event(conversation_id=conversation_id, seq=e["seq"], type=e["type"], payload=e["payload"])
        for e in events
    ]


def save_events(conversation_id: uuid.UUID, events: list[dict[str, Any]]) -> None:
    Event.objects.bulk_create(event_rows(conversation_id, events))


def next_seq(conversation_id: uuid.UUID) -> int:
    return (
        Event.objects.filter(conversation_id=conversation_id).aggregate(m=Max("seq"))["m"] or 0
    ) + 1


def heartbeat(turn_id: uuid.UUID) -> bool:
    """Marks the turn alive; False once a stop was requested."""
    with transaction.atomic():
        commit_without_waiting_for_disk()
        Turn.objects.filter(pk=turn_id).update(heartbeat_at=timezone.now())
        return not Turn.objects.filter(pk=turn_id, stop_requested=True).exists()


def finish_turn(
    turn_id: uuid.UUID,
    status: str,
    error: str = "",
    *,
    rounds: int = 0,
    input_tokens: int = 0,
    output_tokens: int = 0,
) -> None:
    """The turn's end and its totals (counted by the orchestrator: a round writes no turn row)."""
    Turn.objects.filter(pk=turn_id).update(
        status=status,
        error=error[:5000],
        finished_at=timezone.now(),
        rounds=rounds,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )
    Conversation.objects.filter(turns__id=turn_id).update(updated_at=timezone.now())
