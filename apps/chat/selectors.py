"""Permission-scoped reads: a user sees only their own conversations."""

from __future__ import annotations

import uuid

from django.db.models import Exists, OuterRef, QuerySet

from apps.chat.models import Conversation, Event, Message, Turn


def conversations_for(user) -> QuerySet[Conversation]:
    """The user's conversations, each with `running`: whether a turn runs now."""
    if not user.is_authenticated:
        return Conversation.objects.none()
    running = Turn.objects.filter(conversation=OuterRef("pk"), status=Turn.Status.RUNNING)
    return Conversation.objects.filter(owner=user).annotate(running=Exists(running))


def conversation_for(user, conversation_id: object) -> Conversation | None:
    """The user's conversation with this id, or None (also for a malformed id: never an error page)."""
    try:
        key = uuid.UUID(str(conversation_id))
    except ValueError:
        return None
    return conversations_for(user).select_related("provider", "endpoint").filter(pk=key).first()


def history(conversation: Conversation) -> QuerySet[Message]:
    return Message.objects.filter(conversation=conversation).order_by("id")


def events_after(conversation_id: uuid.UUID, after: int, *, until: int | None = None) -> list[dict]:
    events = Event.objects.filter(conversation_id=conversation_id, seq__gt=after)
    if until is not None:
        events = events.filter(seq__lte=until)
    return [event.as_wire() for event in events.order_by("seq")]


def last_seq(conversation_id: uuid.UUID) -> int:
    event = (
        Event.objects.filter(conversation_id=conversation_id).order_by("-seq").only("seq").first()
    )
    return event.seq if event else 0
