"""Turns no worker is left to continue: ended as failed, with events their clients see.

A running turn's worker renews its lease every MCPHUB_RUN_HEARTBEAT_SECONDS, and a live worker takes
over a turn whose lease went stale (apps.chat.lease). One still silent after STALE_AFTER found no
worker to take it (or was given up): its events end with an `error` and an `end`, so an open page
stops waiting and the conversation takes messages again. Run by beat (`chat.expire_lost_turns`),
by each worker's sweep, and before a new turn starts.
"""

from __future__ import annotations

import uuid
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import Q, QuerySet, Sum
from django.utils import timezone

from apps.chat import lease, records
from apps.chat.events import clients_group
from apps.chat.models import Turn

INTERRUPTED = "Interrupted: the worker running this turn was lost. Send your message again."


def lost_turns() -> QuerySet[Turn]:
    cutoff = timezone.now() - records.STALE_AFTER
    silent = lease.silent_since(cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
    return Turn.objects.filter(silent, status=Turn.Status.RUNNING)


@transaction.atomic
def expire(turns: QuerySet[Turn]) -> list[uuid.UUID]:
    expired = []
    for turn in turns.select_for_update(skip_locked=True):
        Turn.objects.filter(pk=turn.pk).update(
            status=Turn.Status.FAILED, error=INTERRUPTED, finished_at=timezone.now()
        )
        events = _closing_events(turn)
        records.save_events(turn.conversation_id, events)
        transaction.on_commit(
            lambda conversation=turn.conversation_id, events=events: _publish(conversation, events)
        )
        expired.append(turn.pk)
    return expired


def _closing_events(turn: Turn) -> list[dict[str, Any]]:
    seq = records.next_seq(turn.conversation_id)
    # The worker counts a turn's tokens and writes them when the turn ends: add up its messages'.
    usage = {
        key: value or 0
        for key, value in turn.messages.aggregate(
            input_tokens=Sum("input_tokens"), output_tokens=Sum("output_tokens")
        ).items()
    }
    return [
        {"type": "error", "seq": seq, "payload": {"message": INTERRUPTED}},
        {
            "type": "end",
            "seq": seq + 1,
            "payload": {"turn": str(turn.pk), "status": Turn.Status.FAILED, "usage": usage},
        },
    ]


def _publish(conversation_id: uuid.UUID, events: list[dict[str, Any]]) -> None:
    async_to_sync(get_channel_layer().group_send)(
        clients_group(conversation_id), {"type": "chat.events", "events": events}
    )
