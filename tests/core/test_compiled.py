"""apps.core.compiled: a queryset compiled once gives what the ORM gives, for any arguments."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth import get_user_model
from django.db.models import F

from apps.chat.models import Conversation, Message, Turn
from apps.core.compiled import Compiled, attnames

pytestmark = pytest.mark.django_db


def _messages(conversation_id: uuid.UUID, role: str):
    return (
        Message.objects.filter(conversation_id=conversation_id, role=role)
        .order_by("id")
        .values("text", "tool_calls", owner=F("conversation__owner_id"))
    )


MESSAGES = Compiled(_messages, uuid.uuid4(), "sample-role-5d1f")


@pytest.fixture
def conversations():
    owner = get_user_model().objects.create(username="compiled")
    found = []
    for n in range(2):
        conversation = Conversation.objects.create(owner=owner)
        turn = Turn.objects.create(conversation=conversation)
        for role, text in (("user", f"hi {n}"), ("assistant", f"hello {n}")):
            Message.objects.create(
                conversation=conversation,
                turn=turn,
                role=role,
                text=text,
                tool_calls=[{"id": f"c{n}", "name": "echo", "arguments": {"n": n}}],
            )
        found.append(conversation)
    return found


def test_rows_are_the_orms_for_each_set_of_arguments(conversations):
    for conversation in conversations:
        for role in ("user", "assistant", "tool"):
            assert MESSAGES.run(conversation.pk, role) == list(_messages(conversation.pk, role))
    first = MESSAGES.first(conversations[1].pk, "assistant")
    assert first["text"] == "hello 1"
    assert first["tool_calls"] == [{"id": "c1", "name": "echo", "arguments": {"n": 1}}]  # decoded
    assert MESSAGES.first(uuid.uuid4(), "user") is None


def test_first_instance_is_the_model_the_orm_loads_with_unselected_fields_deferred(conversations):
    whole = Compiled(
        lambda pk: Conversation.objects.filter(pk=pk).values(*attnames(Conversation)), uuid.uuid4()
    )
    for conversation in conversations:
        loaded = whole.first_instance(Conversation, conversation.pk)
        orm = Conversation.objects.get(pk=conversation.pk)
        assert type(loaded) is Conversation and loaded.pk == orm.pk
        assert {f: getattr(loaded, f) for f in attnames(Conversation)} == {
            f: getattr(orm, f) for f in attnames(Conversation)
        }
        assert not loaded._state.adding and loaded.get_deferred_fields() == set()
    assert whole.first_instance(Conversation, uuid.uuid4()) is None

    some = Compiled(
        lambda pk: Conversation.objects.filter(pk=pk).values("id", "owner_id"), uuid.uuid4()
    )
    partial = some.first_instance(Conversation, conversations[0].pk)
    assert "title" in partial.get_deferred_fields()
    assert partial.title == conversations[0].title  # loaded on access, as the ORM's .only() does


def test_first_instance_sets_an_annotation_on_the_instance_as_annotate_does(conversations):
    from django.db.models import Count

    counted = Compiled(
        lambda pk: Conversation.objects.filter(pk=pk).values(
            *attnames(Conversation), messages_count=Count("messages")
        ),
        uuid.uuid4(),
    )
    loaded = counted.first_instance(Conversation, conversations[0].pk)
    orm = Conversation.objects.annotate(messages_count=Count("messages")).get(
        pk=conversations[0].pk
    )
    assert loaded.messages_count == orm.messages_count == 2
    assert loaded.get_deferred_fields() == set()

    # A foreign key selected by its name, not its attname, is no annotation: left deferred.
    by_name = Compiled(
        lambda pk: Conversation.objects.filter(pk=pk).values("id", "owner"), uuid.uuid4()
    )
    partial = by_name.first_instance(Conversation, conversations[0].pk)
    assert "owner_id" in partial.get_deferred_fields()
    assert partial.owner == conversations[0].owner


def test_first_instance_loads_related_rows_as_select_related_does(
    conversations, django_assert_num_queries
):
    from apps.llm.models import Provider
    from apps.toolsets.models import Endpoint

    related = ("provider", "provider__owner", "endpoint")
    joined = Compiled(
        lambda pk: Conversation.objects.filter(pk=pk).values(*attnames(Conversation, *related)),
        uuid.uuid4(),
    )
    owner = conversations[0].owner
    with_all = conversations[0]
    with_all.provider = Provider.objects.create(
        owner=owner, name="p", base_url="http://127.0.0.1:9/v1", api_key={"k": "v"}
    )
    with_all.endpoint = Endpoint.objects.filter(owner=owner).first()
    with_all.save()
    shared = Provider.objects.create(owner=None, name="s", base_url="http://127.0.0.1:9/v1")
    Conversation.objects.filter(pk=conversations[1].pk).update(provider=shared, endpoint=None)

    for conversation in conversations:
        orm = Conversation.objects.select_related(*related).get(pk=conversation.pk)
        with django_assert_num_queries(1):
            loaded = joined.first_instance(Conversation, conversation.pk, related=related)
            assert loaded.provider == orm.provider and loaded.endpoint == orm.endpoint
            assert loaded.provider.owner == orm.provider.owner
            if orm.provider.owner is not None:
                assert loaded.provider.owner.username == owner.username
        assert loaded.provider.api_key == orm.provider.api_key  # decrypted as the ORM does
        for model, mine, theirs in (
            (Provider, loaded.provider, orm.provider),
            (Conversation, loaded, orm),
        ):
            assert {f: getattr(mine, f) for f in attnames(model)} == {
                f: getattr(theirs, f) for f in attnames(model)
            }


def test_a_sample_that_is_not_unique_among_the_parameters_is_refused(conversations):
    clashing = Compiled(
        lambda role: Message.objects.filter(role=role, text="user").values("text"), "user"
    )
    with pytest.raises(ValueError, match="2 times"):
        clashing.run("assistant")
    with pytest.raises(TypeError, match="expected 2 arguments"):
        MESSAGES.run(conversations[0].pk)


def test_insert_stores_rows_as_bulk_create_would(conversations):
    from apps.chat.models import Event
    from apps.core.compiled import insert

    conversation = conversations[0]
    rows = [
        Event(conversation=conversation, seq=n, type="text", payload={"text": f"part {n}", "n": n})
        for n in (1, 2, 3)
    ]
    insert(Event, rows[:1])  # one row, then several: both statements
    insert(Event, rows[1:])
    insert(Event, [])
    stored = list(conversation.events.order_by("seq").values("seq", "type", "payload"))
    assert stored == [
        {"seq": n, "type": "text", "payload": {"text": f"part {n}", "n": n}} for n in (1, 2, 3)
    ]
    assert all(row.created_at is not None for row in rows)  # auto_now_add, as the ORM sets it
    assert conversation.events.filter(created_at__isnull=True).count() == 0


def test_an_update_compiled_once_changes_what_the_orm_would(conversations):
    from datetime import UTC, datetime, timedelta

    from apps.core.compiled import CompiledUpdate

    claim = CompiledUpdate(
        lambda turn_id, worker, now: (
            Turn.objects.filter(pk=turn_id, worker=""),
            {"worker": worker, "heartbeat_at": now},
        ),
        uuid.uuid4(),
        "sample-worker",
        datetime(2001, 2, 3, 4, 5, 6, 789012, tzinfo=UTC),
    )
    first, second = (c.turns.get() for c in conversations)
    when = datetime(2026, 11, 28, 8, 30, 1, 250000, tzinfo=UTC)
    assert claim.run(first.pk, "w1", when) == 1
    assert claim.run(first.pk, "w2", when) == 0  # taken: its worker is no longer ""
    assert claim.run(second.pk, "w2", when + timedelta(seconds=1)) == 1
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.worker, first.heartbeat_at) == ("w1", when)
    assert (second.worker, second.heartbeat_at) == ("w2", when + timedelta(seconds=1))
    across = CompiledUpdate(
        lambda owner: (Turn.objects.filter(conversation__owner_id=owner), {"worker": "x"}), 987654
    )
    with pytest.raises(ValueError, match="one table"):
        across.run(conversations[0].owner_id)


def test_an_update_adding_to_a_column_binds_each_new_amount(conversations):
    from django.db.models import F

    from apps.core.compiled import CompiledUpdate

    count = CompiledUpdate(
        lambda turn_id, tokens: (
            Turn.objects.filter(pk=turn_id),
            {
                "rounds": F("rounds") + 1,
                "input_tokens": F("input_tokens") + tokens,
                "recoveries": 0,
            },
        ),
        uuid.uuid4(),
        1_000_003,  # not 1 nor 0, which the statement also carries
    )
    turn = conversations[0].turns.get()
    for tokens in (5, 70_000, 0):
        assert count.run(turn.pk, tokens) == 1
    turn.refresh_from_db()
    assert (turn.rounds, turn.input_tokens, turn.recoveries) == (3, 70_005, 0)
