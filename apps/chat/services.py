"""Writes: conversations, turns, and what the orchestrator records as a turn runs.

Starting a turn commits the user's message and the turn row, then enqueues the worker's task in
`transaction.on_commit`, so the worker never looks for a row that is not there yet.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.chat import runtime
from apps.chat.models import Conversation, Message, Turn
from apps.chat.providers import NO_PROVIDER
from apps.core.compiled import SAMPLE_TIME, CompiledUpdate, insert
from apps.core.errors import UserError

if TYPE_CHECKING:
    from apps.chat.context_items import Context
from apps.toolsets.models import Endpoint
from apps.toolsets.selectors import default_endpoint_for

logger = logging.getLogger(__name__)
MAX_TEXT = 100_000
TITLE_LENGTH = 60


class ChatError(UserError):
    """A request the chat refuses, with a message the user can act on."""


# -- conversations ------------------------------------------------------------------------


def _default_provider(owner):
    from apps.llm.selectors import default_provider_for

    return default_provider_for(owner)


def _check_provider(owner, provider) -> None:
    from apps.llm.selectors import providers_for

    if provider is not None and not providers_for(owner).filter(pk=provider.pk).exists():
        raise ChatError("Unknown provider.", code="provider")


def _check_endpoint(owner, endpoint: Endpoint | None) -> None:
    if endpoint is not None and endpoint.owner_id != owner.pk:
        raise ChatError("Unknown endpoint.", code="endpoint")


def create_conversation(
    *, owner, title: str = "", provider=None, model: str = "", endpoint: Endpoint | None = None
) -> Conversation:
    """Every argument optional: the owner's default provider (and its model) and default endpoint."""
    _check_provider(owner, provider)
    _check_endpoint(owner, endpoint)
    if provider is None:
        provider = _default_provider(owner)
    if endpoint is None:
        endpoint = default_endpoint_for(owner)
    return Conversation.objects.create(
        owner=owner,
        title=title.strip()[:200],
        provider=provider,
        model=model.strip(),
        endpoint=endpoint,
    )


def update_conversation(*, conversation: Conversation, **changes: Any) -> Conversation:
    if "provider" in changes:
        _check_provider(conversation.owner, changes["provider"])
    if "endpoint" in changes:
        _check_endpoint(conversation.owner, changes["endpoint"])
    for field in ("title", "provider", "model", "endpoint"):
        if field in changes:
            value = changes[field]
            setattr(conversation, field, value.strip() if isinstance(value, str) else value)
    conversation.save()
    return conversation


def delete_conversation(*, conversation: Conversation) -> None:
    conversation.delete()


# -- turns ----------------------------------------------------------------------------------


BUSY = "A turn is already running in this conversation: wait for it to end or stop it."


def start_turn(*, conversation: Conversation, text: Any, context: Context | None = None) -> Turn:
    """The user's message, and a turn the worker runs (refused while another turn runs).

    One transaction without savepoints (BEGIN, SET, two INSERTs, an UPDATE, COMMIT): a hundred
    users sending at once wait on the database for that and no more. Unlike the turn's events and
    the model's messages, this commit waits for the WAL flush: what the user typed and was told is
    sent survives even a crash of Postgres itself.

    `context` (apps.chat.context_items): a prompt's messages, stored before the user's, and
    resources attached to it; with one, the text may be empty."""
    if text is None and context:
        text = ""
    if not isinstance(text, str) or not (text.strip() or context):
        raise ChatError("The message needs a non-empty 'text'.")
    if (
        context
        and not text.strip()
        and not context.attachments
        and context.prompt[-1].role != "user"
    ):
        raise ChatError("The prompt ends with the model's message: add yours.")
    if len(text) > MAX_TEXT:
        raise ChatError(f"The message is too long (at most {MAX_TEXT} characters).")
    if conversation.provider_id is None:
        raise ChatError(NO_PROVIDER, code="no_provider")
    try:
        return _new_turn(conversation, text, context)
    except IntegrityError:
        if not conversation.turns.filter(status=Turn.Status.RUNNING).exists():
            raise  # not the one-running-turn constraint
    # Another turn runs. A lost one (its worker died, nobody ended it) is ended here, so the user
    # can go on at once; only this rare path pays for the check.
    if not _expire_stale_turns(conversation):
        raise ChatError(BUSY, code="busy")
    try:
        return _new_turn(conversation, text, context)
    except IntegrityError:
        raise ChatError(BUSY, code="busy") from None


def _new_turn(conversation: Conversation, text: str, context: Context | None) -> Turn:
    """Its rows written by statements built once (apps.core.compiled), on the path of every
    message's first token: the ORM's create, create and save cost 1.9 ms of the web's CPU here,
    0.9 ms this way (in process, Postgres)."""
    turn = Turn(conversation=conversation)
    with transaction.atomic():
        # First, so a refusal (another turn runs) rolls back nothing else.
        insert(Turn, [turn])
        if context:
            _store_context(conversation, turn, text, context)
        else:
            user = Message(conversation=conversation, turn=turn, role=Message.Role.USER, text=text)
            insert(Message, [user])
        if not conversation.title:
            title = (
                text
                if text.strip() or not context or not context.prompt
                else context.prompt[0].text
            )
            conversation.title = " ".join(title.split())[:TITLE_LENGTH]
        conversation.updated_at = timezone.now()
        _TOUCH.run(conversation.pk, conversation.title, conversation.updated_at)
        transaction.on_commit(lambda: _enqueue(turn.id))
    return turn


_TOUCH = CompiledUpdate(
    lambda conversation_id, title, now: (
        Conversation.objects.filter(pk=conversation_id),
        {"title": title, "updated_at": now},
    ),
    uuid.uuid4(),
    "sample-title-3e9a",
    SAMPLE_TIME,
)


def _store_context(conversation: Conversation, turn: Turn, text: str, context: Context) -> None:
    """The prompt's messages, then the user's own with the attached resources (`result` keeps
    what the page shows of each: the prompt's content, the typed text and the attachments)."""
    rows = [
        Message(conversation=conversation, turn=turn, role=m.role, text=m.text, result=m.shown)
        for m in context.prompt
    ]
    if text.strip() or context.attachments:
        full = "\n\n".join(part for part in (text, context.attached_text) if part)
        shown = {"text": text, "attachments": context.attachments}
        rows.append(
            Message(
                conversation=conversation,
                turn=turn,
                role=Message.Role.USER,
                text=full,
                result=shown,
            )
        )
    Message.objects.bulk_create(rows)


def _enqueue(turn_id: uuid.UUID) -> None:
    from apps.chat.tasks import run_turn

    runtime.hand_off(run_turn, str(turn_id))


def _expire_stale_turns(conversation: Conversation) -> bool:
    """Ends this conversation's lost turns; True when there were any."""
    from apps.chat.recovery import expire, lost_turns

    return bool(expire(lost_turns().filter(conversation=conversation)))


def request_stop(*, conversation: Conversation) -> Turn:
    turn = conversation.turns.filter(status=Turn.Status.RUNNING).first()
    if turn is None:
        raise ChatError("No turn is running.", code="idle")
    Turn.objects.filter(pk=turn.pk).update(stop_requested=True)
    return turn


def stop_turn(*, conversation: Conversation) -> Turn:
    """Sync callers (the REST API): mark the stop and tell the worker running the turn once this
    commits (the worker's heartbeat also sees the mark, should the message be lost)."""
    turn = request_stop(conversation=conversation)
    transaction.on_commit(lambda: _send_stop(conversation.pk))
    return turn


def _send_stop(conversation_id: uuid.UUID) -> None:
    from asgiref.sync import async_to_sync

    from apps.chat.events import send_control

    try:
        async_to_sync(send_control)(conversation_id, "stop")
    except Exception:  # noqa: BLE001 - the turn reads stop_requested within STOP_CHECK_SECONDS
        logger.warning("chat: could not send stop for %s", conversation_id, exc_info=True)


def check_approval(
    *, conversation: Conversation, call_id: Any, allow: Any, edit: Any = None
) -> Turn:
    """Validate an approve/deny: the orchestrator waiting on it receives the decision. `edit`
    (a sampling request's changes, allowed with them) is checked against the request by the turn,
    which shows the request again with what is wrong."""
    if not isinstance(call_id, str) or not call_id:
        raise ChatError("'approve' needs a 'call_id' string.")
    if not isinstance(allow, bool):
        raise ChatError("'approve' needs 'allow': true or false.")
    if edit is not None and (not isinstance(edit, dict) or not allow):
        raise ChatError(
            "'edit' is an object of a sampling request's changes, sent with allow: true."
        )
    return check_running(conversation=conversation)


def check_running(*, conversation: Conversation) -> Turn:
    """The running turn, which waits for the user's decision or answer; ChatError when none runs."""
    turn = conversation.turns.filter(status=Turn.Status.RUNNING).first()
    if turn is None:
        raise ChatError("No turn is running: nothing waits for your answer.", code="idle")
    return turn
