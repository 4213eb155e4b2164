"""The chat journal stores the writes of many turns in one transaction: their lease fences are
checked together, and a turn another worker took over loses only its own write."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.chat import records
from apps.chat.journal import Journal, Write, store
from apps.chat.models import Event, Turn
from apps.chat.services import create_conversation
from apps.llm.models import Provider


def _turns(owner, count: int) -> list[Turn]:
    Provider.objects.create(name="p", kind="openai", base_url="http://127.0.0.1:1/v1", owner=owner)
    return [
        Turn.objects.create(conversation=create_conversation(owner=owner), worker="here:1")
        for _ in range(count)
    ]


def _write(journal: Journal, turn: Turn, worker: str = "here:1"):
    event = [{"seq": 1, "type": "text", "payload": {"text": "hi"}}]
    return journal.write(
        rows=records.event_rows(turn.conversation_id, event),
        fences=[records.StillHeld(turn.pk, worker)],
    )


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_writes_of_many_turns_are_fenced_together_and_a_lost_one_fails_alone(alice):
    kept, taken, other = await sync_to_async(_turns)(alice, 3)
    await sync_to_async(Turn.objects.filter(pk=taken.pk).update)(worker="elsewhere:2")
    journal = Journal()

    outcomes = await asyncio.gather(
        _write(journal, kept), _write(journal, taken), _write(journal, other),
        return_exceptions=True,
    )  # fmt: skip

    assert outcomes[0] is None and outcomes[2] is None
    assert isinstance(outcomes[1], records.LeaseLost)
    stored = await sync_to_async(
        lambda: set(Event.objects.values_list("conversation_id", flat=True))
    )()
    assert stored == {kept.conversation_id, other.conversation_id}
    beats = await sync_to_async(lambda: dict(Turn.objects.values_list("pk", "heartbeat_at")))()
    assert beats[kept.pk] and beats[other.pk] and beats[taken.pk] is None  # renewed: only the held


@pytest.mark.django_db
def test_a_batch_checks_all_its_fences_in_one_update(alice):
    turns = _turns(alice, 20)
    event = [{"seq": 1, "type": "text", "payload": {"text": "hi"}}]
    writes = [
        Write(
            rows=records.event_rows(turn.conversation_id, event),
            fences=[records.StillHeld(turn.pk, "here:1")],
            done=None,
        )
        for turn in turns
    ]
    with CaptureQueriesContext(connection) as queries:
        store(writes)
    fences = [q["sql"] for q in queries if q["sql"].startswith('UPDATE "chat_turn"')]
    assert len(fences) == 1  # one per write cost ~0.37 ms of CPU each (benchmarks/journal.py)
    assert Event.objects.count() == 20


@pytest.mark.django_db
def test_a_turn_stores_its_opening_event_with_its_claim_and_only_once(alice):
    """The user's message and first status events are written by the claim's transaction, not by a journal write the
    turn's first token would wait behind; a turn taken over does not write it again."""
    from apps.chat import lease
    from apps.chat.orchestrator import WAITING, _start
    from apps.chat.services import start_turn

    Provider.objects.create(name="p", kind="openai", base_url="http://127.0.0.1:1/v1", owner=alice)
    turn = start_turn(conversation=create_conversation(owner=alice), text="hello")

    setup = _start(turn.pk, False)

    stored = list(
        Event.objects.filter(conversation_id=turn.conversation_id).values("seq", "type", "payload")
    )
    assert stored == [
        {"seq": 1, "type": "user_message", "payload": {"turn": str(turn.pk), "text": "hello"}},
        {"seq": 2, "type": "status", "payload": WAITING},
    ]
    assert list(setup.opening) == stored and setup.first_seq == 3
    assert Turn.objects.get(pk=turn.pk).worker == lease.WORKER[:200]
    assert _start(turn.pk, False) is None  # claimed once
    again = _start(turn.pk, True)  # this worker's lease took it over: nothing is written again
    assert again.opening == () and again.first_seq == 3
    assert Event.objects.filter(conversation_id=turn.conversation_id).count() == 2
