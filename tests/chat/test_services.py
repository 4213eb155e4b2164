"""Turn bookkeeping without a hub: one turn at a time, lost turns expire, history the model can take."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import F
from django.utils import timezone

from apps.chat import services
from apps.chat.history import CANCELLED, to_messages
from apps.chat.models import Event, Message, Turn
from apps.chat.tasks import expire_lost_turns
from apps.chat.tools import result_text
from apps.llm.models import Provider

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(alice):
    Provider.objects.create(name="p", kind="openai", base_url="http://127.0.0.1:1/v1", owner=alice)
    return services.create_conversation(owner=alice)


def test_a_turn_lost_with_its_worker_no_longer_blocks_the_conversation(
    conversation, django_capture_on_commit_callbacks
):
    lost = Turn.objects.create(
        conversation=conversation,
        worker="gone:1",
        heartbeat_at=timezone.now() - timedelta(minutes=5),
    )
    with django_capture_on_commit_callbacks() as enqueued:
        turn = services.start_turn(conversation=conversation, text="still there?")
    lost.refresh_from_db()
    assert lost.status == "failed" and "Interrupted" in lost.error
    assert (
        turn.status == "running" and len(enqueued) == 2
    )  # the lost turn's closing events, this turn's task
    closing = list(Event.objects.filter(conversation=conversation).values_list("seq", "type"))
    assert closing == [(1, "error"), (2, "end")]


def test_beat_ends_lost_turns_and_leaves_live_ones(conversation):
    lost = Turn.objects.create(conversation=conversation)
    Turn.objects.filter(pk=lost.pk).update(started_at=timezone.now() - timedelta(minutes=5))
    other = services.create_conversation(owner=conversation.owner)
    live = Turn.objects.create(conversation=other, heartbeat_at=timezone.now())

    expire_lost_turns()

    assert Turn.objects.get(pk=lost.pk).status == "failed"
    assert Turn.objects.get(pk=live.pk).status == "running"
    assert expire_lost_turns.name == "chat.expire_lost_turns"  # beat schedules refer to it by name


def test_a_turn_handed_over_at_shutdown_is_left_to_its_claimant(conversation):
    from apps.chat import lease, records

    turn = Turn.objects.create(
        conversation=conversation, worker=lease.WORKER, heartbeat_at=timezone.now()
    )
    assert lease.release(lease.TURNS, [turn.pk]) == 1

    expire_lost_turns()
    assert Turn.objects.get(pk=turn.pk).status == "running"

    Turn.objects.filter(pk=turn.pk).update(heartbeat_at=F("heartbeat_at") - records.STALE_AFTER)
    expire_lost_turns()
    assert Turn.objects.get(pk=turn.pk).status == "failed"


def test_a_live_turn_refuses_a_second_message(conversation, django_capture_on_commit_callbacks):
    Turn.objects.create(conversation=conversation, heartbeat_at=timezone.now())
    with pytest.raises(services.ChatError, match="already running"):
        services.start_turn(conversation=conversation, text="hello")
    assert not Message.objects.exists()


@pytest.mark.parametrize("text", ["", "   ", None, 5, "x" * (services.MAX_TEXT + 1)])
def test_bad_text_is_refused_and_changes_nothing(conversation, text):
    with pytest.raises(services.ChatError):
        services.start_turn(conversation=conversation, text=text)
    assert not Turn.objects.exists() and not Message.objects.exists()


def test_a_stopped_call_is_answered_in_the_history(conversation):
    Message.objects.create(conversation=conversation, role="user", text="go")
    Message.objects.create(
        conversation=conversation,
        role="assistant",
        tool_calls=[
            {"id": "a", "name": "echo", "arguments": {}},
            {"id": "b", "name": "echo", "arguments": {}},
        ],
    )
    Message.objects.create(conversation=conversation, role="tool", tool_call_id="a", text="done")
    Message.objects.create(conversation=conversation, role="user", text="next")
    history = to_messages(conversation.messages.order_by("id"))
    assert [(m.role, m.tool_call_id, m.text) for m in history] == [
        ("user", None, "go"),
        ("assistant", None, ""),
        ("tool", "a", "done"),
        ("tool", "b", CANCELLED),
        ("user", None, "next"),
    ]


def test_a_replys_provider_fields_go_back_only_to_the_provider_that_sent_them(conversation):
    deepseek = conversation.provider
    Message.objects.create(conversation=conversation, role="user", text="go")
    Message.objects.create(
        conversation=conversation,
        role="assistant",
        reasoning="I think",
        tool_calls=[{"id": "a", "name": "echo", "arguments": {}}],
        replay={
            "provider": deepseek.pk,
            "message": {"reasoning_content": "I think"},
            "calls": {"a": {"extra_content": {"google": {"thought_signature": "sig"}}}},
        },
    )
    Message.objects.create(conversation=conversation, role="tool", tool_call_id="a", text="done")

    same = to_messages(conversation.messages.order_by("id"), provider_id=deepseek.pk)[1]
    assert same.replay == {"reasoning_content": "I think"}
    assert same.tool_calls[0].replay == {"extra_content": {"google": {"thought_signature": "sig"}}}
    # Switched to another provider mid-conversation: it is sent the reasoning's text nowhere, the fields not at all.
    other = to_messages(conversation.messages.order_by("id"), provider_id=deepseek.pk + 1)[1]
    assert (other.replay, other.tool_calls[0].replay, other.reasoning) == (None, None, "I think")


def test_a_long_result_is_cut_for_the_model():
    text = result_text({"content": [{"type": "text", "text": "x" * 50}]}, 10)
    assert text.startswith("x" * 10 + "\n") and "40 more characters" in text
    assert result_text({"content": [], "structuredContent": {"a": 1}}, 100) == '{"a": 1}'


def test_a_chat_socket_opens_only_its_owners_conversation_with_its_last_event(
    conversation, alice, django_user_model
):
    from django.contrib.auth.models import AnonymousUser

    from apps.chat import selectors

    found, last = selectors.opened(alice, conversation.pk)
    assert (found.pk, found.owner_id, found.provider_id, last) == (
        conversation.pk,
        alice.pk,
        conversation.provider_id,
        0,
    )
    services.start_turn(conversation=conversation, text="numbered")
    Event.objects.bulk_create(
        Event(conversation=conversation, seq=seq, type="status", payload={}) for seq in (1, 2, 7)
    )
    found, last = selectors.opened(alice, str(conversation.pk))
    assert last == 7 and found.title == "numbered"

    mallory = django_user_model.objects.create(username="mallory")
    assert selectors.opened(mallory, conversation.pk) is None  # not hers: nothing to learn
    assert selectors.opened(AnonymousUser(), conversation.pk) is None
    assert selectors.opened(alice, "not-a-uuid") is None
