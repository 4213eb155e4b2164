"""What a backend asks during a call nobody else can answer — a gateway client that declared no
elicitation (or sampling, on an endpoint set to `ask`) — shown on the user's open hub pages.

Every signed-in page holds `/ws/asks/` (static/js/asks.js), whose consumer joins the user's group.
`ask()` sends the question to that group from whichever process holds the call (the channel layer:
Redis in production, in-process embedded); each page's consumer acknowledges it and shows it in
the page's "The hub needs your answer" panel. The first answer that fits (a form's values checked
against its schema) goes back to the asker; the question then leaves every page. No page
acknowledging within ACK_SECONDS, or no answer within the wait, is `NotAskable`: the caller gets
the clear error it got before.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.layers import get_channel_layer
from django.conf import settings

from apps.chat import elicitation
from apps.chat.auth import socket_access
from apps.chat.resumable import database_sync_to_async

# How long a page's socket has to say it shows a question before nobody is taken to be there.
ACK_SECONDS = 5.0


class NotAskable(Exception):
    """No page of the user took the question, or nobody answered it in time."""


def user_group(user_id: int) -> str:
    return f"asks.{user_id}"


def _reply_group(ask_id: str) -> str:
    return f"asksreply.{ask_id}"


async def ask(user_id: int, question: dict[str, Any]) -> dict[str, Any]:
    """The answer to `question` ({"kind": "elicitation", …the request's params} → {action,
    content}; {"kind": "sampling", name, arguments, reason} → {allow}) from one of the user's open
    pages; NotAskable when none is open or nobody answers within MCPHUB_PAGE_ASK_SECONDS."""
    layer = get_channel_layer()
    question = {"id": f"ask-{uuid.uuid4().hex[:12]}", **question}
    channel = await layer.new_channel("asks.")
    reply = _reply_group(question["id"])
    await layer.group_add(reply, channel)
    try:
        await layer.group_send(user_group(user_id), {"type": "asks.show", "ask": question})
        try:
            async with asyncio.timeout(ACK_SECONDS):
                message = await layer.receive(channel)  # a page shows it (or answered already)
            async with asyncio.timeout(settings.MCPHUB_PAGE_ASK_SECONDS):
                while message["type"] != "asks.answer":
                    message = await layer.receive(channel)
        except TimeoutError:
            raise NotAskable() from None
        return message["answer"]
    finally:
        await layer.group_discard(reply, channel)
        await layer.group_send(user_group(user_id), {"type": "asks.gone", "id": question["id"]})


def _answer(question: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """A page's answer to `question` as the asker takes it; ElicitationError when it does not fit."""
    if question["kind"] == "sampling":
        if not isinstance(payload.get("allow"), bool):
            raise elicitation.ElicitationError("'answer' needs 'allow': true or false.")
        return {"allow": payload["allow"]}
    _, action, content = elicitation.parse_answer(payload)
    if action == "accept" and question.get("mode") != "url":
        content = elicitation.check_content(question.get("requestedSchema") or {}, content)
    return {"action": action, "content": content}


class AsksConsumer(AsyncJsonWebsocketConsumer):
    """`/ws/asks/`: the signed-in user's open page. Server → client: `ask` {id, kind, …}, `gone`
    {id} (answered here or elsewhere, or no longer waited for), `error` {id, message} (the answer
    does not fit: shown with the question, which stays). Client → server: `answer` {id, action,
    content} for an elicitation, {id, allow} for a sampling request."""

    group: str | None = None

    async def connect(self) -> None:
        access = await database_sync_to_async(socket_access)(self.scope)
        if not access.user.is_authenticated or access.refusal(write=True) is not None:
            await self.close(code=4403)
            return
        self.asked: dict[str, dict[str, Any]] = {}
        self.group = user_group(access.user.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def asks_show(self, message: dict[str, Any]) -> None:
        question = message["ask"]
        self.asked[question["id"]] = question
        await self.channel_layer.group_send(
            _reply_group(question["id"]), {"type": "asks.shown", "id": question["id"]}
        )
        await self.send_json({"type": "ask", "payload": question})

    async def asks_gone(self, message: dict[str, Any]) -> None:
        if self.asked.pop(message["id"], None) is not None:
            await self.send_json({"type": "gone", "payload": {"id": message["id"]}})

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        content = content if isinstance(content, dict) else {}
        payload = content.get("payload") if isinstance(content.get("payload"), dict) else {}
        question = self.asked.get(str(payload.get("id")))
        if content.get("type") != "answer" or question is None:
            message = "Send 'answer' with the id of a question this page shows."
            await self.send_json({"type": "error", "payload": {"message": message}})
            return
        try:
            answer = _answer(question, payload)
        except elicitation.ElicitationError as exc:
            error = {"id": question["id"], "message": exc.message}
            await self.send_json({"type": "error", "payload": error})
            return
        await self.channel_layer.group_send(
            _reply_group(question["id"]), {"type": "asks.answer", "answer": answer}
        )
