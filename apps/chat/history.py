"""What a turn starts from: the conversation's settings and its history as provider-neutral messages."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from django.db.models import Case, F, JSONField, OuterRef, Q, Subquery, When

from apps.chat.models import Event, Turn
from apps.chat.models import Message as MessageRow
from apps.chat.rounds import stored_message
from apps.core.compiled import Compiled
from apps.llm.types import Image, Message, ToolCall
from apps.toolsets.models import Endpoint

CANCELLED = "The call did not complete (the turn was stopped or interrupted)."
HISTORY_FIELDS = (
    "role",
    "text",
    "tool_calls",
    "tool_call_id",
    "is_error",
    "turn_id",
    "reasoning",
    "replay",
)


@dataclass(frozen=True)
class TurnSetup:
    turn_id: uuid.UUID
    conversation_id: uuid.UUID
    user_id: int
    provider_id: int
    endpoint_id: int | None
    model: str
    history: tuple[Message, ...]
    user_text: str
    first_seq: int
    adapter: Callable[[], Any]
    approval_reason: Callable[[object], str | None]
    # What the turn's message took along, as the page shows it (apps.chat.context_items): the
    # prompt's messages and the attached resources; empty for a plain message.
    user_context: dict[str, Any] = field(default_factory=dict)
    # Taken over from a lost worker: the calls of the turn's last stored round that have no stored
    # result (settled by apps.chat.unfinished, `history` ends before their answers).
    unsent: tuple[ToolCall, ...] = ()
    # Its first events (the user's message, the first status), stored with the turn's claim: to
    # send, not to store.
    opening: tuple[dict[str, Any], ...] = ()


def load_turn(turn_id: uuid.UUID) -> TurnSetup | None:
    """Sync ORM: call from a thread. None when the turn vanished, is not running, or lost its provider."""
    from apps.chat.providers import NO_PROVIDER, adapter, saved

    turn = _SETUP.first(turn_id)
    if turn is None or turn["status"] != Turn.Status.RUNNING:
        return None
    provider = (
        saved(turn["provider_id"], turn["provider_updated_at"]) if turn["provider_id"] else None
    )
    if provider is None:
        from apps.chat.records import finish_turn

        finish_turn(turn_id, Turn.Status.FAILED, NO_PROVIDER)
        return None
    # What the model is sent of each message, not the full tool results kept beside it; plain rows,
    # not model instances (a deferred-field instance costs more to build than the result it skips).
    rows = [SimpleNamespace(**row) for row in _HISTORY.run(turn["conversation_id"])]
    history = to_messages(rows, provider_id=provider.pk)
    unsent = _unsent(rows, turn_id, history)
    endpoint = (
        Endpoint(pk=turn["endpoint_id"], approval=turn["approval"])
        if turn["endpoint_id"] is not None
        else None
    )
    return TurnSetup(
        turn_id=turn_id,
        conversation_id=turn["conversation_id"],
        user_id=turn["owner_id"],
        provider_id=provider.pk,
        endpoint_id=turn["endpoint_id"],
        model=turn["model"] or provider.default_model,
        history=tuple(history[: len(history) - len(unsent)]),
        unsent=unsent,
        first_seq=(turn["last_seq"] or 0) + 1,
        **_user_side([r for r in rows if r.turn_id == turn_id]),
        adapter=lambda: adapter(provider),
        approval_reason=endpoint.approval_reason if endpoint else (lambda annotations: None),
    )


# A turn's start reads its turn, conversation, endpoint and the number of its conversation's last
# event in one statement, compiled once (apps.core.compiled: 0.40 ms instead of 2.1 ms for the two
# queries through the ORM), and its provider only when saved since (apps.chat.providers.saved).
_SETUP = Compiled(
    lambda turn_id: Turn.objects.filter(pk=turn_id).values(
        "status",
        "conversation_id",
        owner_id=F("conversation__owner_id"),
        model=F("conversation__model"),
        provider_id=F("conversation__provider_id"),
        provider_updated_at=F("conversation__provider__updated_at"),
        endpoint_id=F("conversation__endpoint_id"),
        approval=F("conversation__endpoint__approval"),
        last_seq=Subquery(
            Event.objects.filter(conversation_id=OuterRef("conversation_id"))
            .order_by("-seq")
            .values("seq")[:1]
        ),
    ),
    uuid.uuid4(),
)
_HISTORY = Compiled(
    lambda conversation_id: (
        MessageRow.objects.filter(conversation_id=conversation_id)
        .order_by("id")
        .values(*HISTORY_FIELDS, shown=_shown_of())
    ),
    uuid.uuid4(),
)


def _shown_of() -> Case:
    """What the page shows of the user's messages and the prompts' (their `result`: the context
    they took along, pictures included), read with the history; tool results stay unread."""
    return Case(
        When(~Q(role=MessageRow.Role.TOOL), then=F("result")),
        default=None,
        output_field=JSONField(),
    )


def _user_side(rows: list[Any]) -> dict[str, Any]:
    """The turn's user text, and what its message took along (apps.chat.context_items)."""
    mine = [r for r in rows if r.role != MessageRow.Role.TOOL]
    if not any(r.shown for r in mine):
        last = next((r for r in reversed(mine) if r.role == MessageRow.Role.USER), None)
        return {"user_text": last.text if last else "", "user_context": {}}
    prompt = [{"role": r.role, **r.shown} for r in mine if "prompt" in (r.shown or {})]
    own = mine[-1].shown or {} if mine[-1].role == MessageRow.Role.USER else {}
    own = {"text": ""} if "prompt" in own else own  # the prompt's own last message is the user's
    context = {"prompt": prompt, "attachments": own.get("attachments") or []}
    return {"user_text": own.get("text", ""), "user_context": context}


def _unsent(rows, turn_id: uuid.UUID, history: list[Message]) -> tuple[ToolCall, ...]:
    """The calls of this turn's last reply left without a result: to_messages answered them last,
    as cancelled, which a turn taken over settles instead."""
    last = next(
        (i for i in range(len(rows) - 1, -1, -1) if rows[i].role != MessageRow.Role.TOOL), None
    )
    if (
        last is None
        or rows[last].turn_id != turn_id
        or rows[last].role != MessageRow.Role.ASSISTANT
    ):
        return ()
    answered = {r.tool_call_id for r in rows[last + 1 :]}
    reply = next(m for m in reversed(history) if m.role == "assistant")
    return tuple(c for c in reply.tool_calls if c.id not in answered)


def to_messages(rows, *, provider_id: int | None = None) -> list[Message]:
    """The stored history as the model sees it; a tool call left without a result (a stopped or
    lost turn) gets one, since providers refuse a history with an unanswered call. A reply's
    provider fields go back only to the provider that sent them (`provider_id`): another one may
    refuse fields it does not know, and could not read them anyway."""
    messages: list[Message] = []
    unanswered: list[str] = []
    for row in rows:
        if row.role != MessageRow.Role.TOOL:
            messages.extend(_answer(unanswered))
            unanswered = []
        if row.role == MessageRow.Role.USER:
            images = _images(getattr(row, "shown", None) or {})
            messages.append(Message(role="user", text=row.text, images=images))
        elif row.role == MessageRow.Role.ASSISTANT:
            replay = (
                row.replay if row.replay and row.replay.get("provider") == provider_id else None
            )
            message = stored_message(
                text=row.text, calls=row.tool_calls, reasoning=row.reasoning, replay=replay
            )
            messages.append(message)
            unanswered = [c.id for c in message.tool_calls]
        elif row.tool_call_id in unanswered:
            unanswered.remove(row.tool_call_id)
            messages.append(
                Message(
                    role="tool", text=row.text, tool_call_id=row.tool_call_id, is_error=row.is_error
                )
            )
    return messages + _answer(unanswered)


def _images(shown: dict[str, Any]) -> tuple[Image, ...]:
    """The pictures a user message took along: a prompt's image content, attached image resources
    (apps.chat.context_items keeps them; one too large to keep has no data)."""
    items = [
        item.get("resource") if item.get("type") == "resource" else item
        for item in shown.get("content") or []
    ]
    items += [c for a in shown.get("attachments") or [] for c in a.get("contents") or []]
    return tuple(
        Image(item["mimeType"], item.get("data") or item.get("blob"))
        for item in items
        if isinstance(item, dict)
        and str(item.get("mimeType", "")).startswith("image/")
        and (item.get("data") or item.get("blob"))
    )


def _answer(call_ids: list[str]) -> list[Message]:
    return [
        Message(role="tool", text=CANCELLED, tool_call_id=call_id, is_error=True)
        for call_id in call_ids
    ]
