"""`/ws/chat/<conversation-id>/`: moves messages between a client and the conversation's turns.

Client → server: `message` {text}, `stop`, `approve` {call_id, allow}, `resume` {after}.
Server → client: the conversation's events (`user_message` opens each turn; then `status`, `text`,
`tool_call`, `approval_required`, `tool_result`, `error`, and `end` with the turn's token usage),
each `{"type", "seq", "payload"}`, in `seq` order without gaps or repeats; an `error` about this connection's own request has `seq: null` (it is not
part of the conversation and is not replayed).
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from apps.chat import events, selectors, services
from apps.chat.auth import websocket_user

CLIENT_TYPES = ("message", "stop", "approve", "resume")
# Live events wait this long after the socket opens for the client to say where it is: a
# reconnecting client's `resume` (the chat page sends one on every open) must be answered before
# any newer live event, or it would see e.g. 21 before the replayed 5..20. A client's first
# message of any kind ends the wait at once; events are held, never dropped.
RESUME_GRACE_SECONDS = 0.25


# Not Channels' thread-sensitive default: that runs every socket's queries on one thread, so a
# hundred clients sending at once would wait on each other; nor the loop's default executor (cores
# + 4 threads): a hundred messages at once queued ~2 s behind six database calls at a time. Each
# thread keeps its database connection.
_DB_THREADS = ThreadPoolExecutor(12, thread_name_prefix="chat-ws-db")


def database_sync_to_async(fn):
    return sync_to_async(fn, thread_sensitive=False, executor=_DB_THREADS)


class ChatConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        from apps.chat import runtime

        runtime.bind_web_loop()
        user = await websocket_user(self.scope)
        conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
        self.conversation = await database_sync_to_async(selectors.conversation_for)(user, conversation_id)
        if self.conversation is None:
            await self.close(code=4403)  # also for another user's conversation: nothing to learn
            return
        self.group = events.clients_group(self.conversation.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        # Joined first, counted second: an event stored after this count arrives through the group.
        self.cursor = await database_sync_to_async(selectors.last_seq)(self.conversation.pk)
        self.held: list[dict[str, Any]] | None = []
        self.sending = asyncio.Lock()
        await self.accept()
        self.grace = asyncio.get_running_loop().call_later(
            RESUME_GRACE_SECONDS, lambda: asyncio.ensure_future(self._go_live())
        )

    async def disconnect(self, code: int) -> None:
        if getattr(self, "grace", None) is not None:
            self.grace.cancel()
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        if kind not in CLIENT_TYPES:
            await self._error(f"Unknown message type {kind!r}: send one of {', '.join(CLIENT_TYPES)}.")
            return
        payload = content.get("payload", {})
        if not isinstance(payload, dict):
            await self._error("'payload' must be an object.")
            return
        try:
            if kind != "resume":
                await self._go_live()
            await getattr(self, f"_on_{kind}")(payload)
        except services.ChatError as exc:
            await self._error(exc.message, code=exc.code)
        finally:
            if kind == "resume":
                await self._go_live()  # after the replay: held live events follow it in order

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        if text_data is None:
            await self._error("Send JSON text frames.")
            return
        try:
            content = json.loads(text_data)
        except ValueError:
            await self._error("Malformed JSON.")
            return
        await self.receive_json(content)

    # -- client messages -------------------------------------------------------------------

    async def _on_message(self, payload: dict[str, Any]) -> None:
        await database_sync_to_async(services.start_turn)(conversation=self.conversation, text=payload.get("text"))

    async def _on_stop(self, payload: dict[str, Any]) -> None:
        await database_sync_to_async(services.request_stop)(conversation=self.conversation)
        await events.send_control(self.conversation.pk, "stop")

    async def _on_approve(self, payload: dict[str, Any]) -> None:
        call_id, allow = payload.get("call_id"), payload.get("allow")
        await database_sync_to_async(services.check_approval)(conversation=self.conversation, call_id=call_id, allow=allow)
        await events.send_control(self.conversation.pk, "approve", call_id=call_id, allow=allow)

    async def _on_resume(self, payload: dict[str, Any]) -> None:
        after = payload.get("after", 0)
        if not isinstance(after, int) or isinstance(after, bool) or after < 0:
            raise services.ChatError("'resume' needs 'after': a sequence number (0 for everything).")
        async with self.sending:
            stored = await database_sync_to_async(selectors.events_after)(self.conversation.pk, after)
            for event in stored:
                await self.send_json(event)
            self.cursor = stored[-1]["seq"] if stored else max(after, self.cursor)

    # -- events from the turn --------------------------------------------------------------

    async def chat_events(self, message: dict[str, Any]) -> None:
        if self.held is not None:
            self.held.append(message)
            return
        async with self.sending:
            await self._deliver(message)

    async def _go_live(self) -> None:
        if self.held is None:
            return
        held, self.held = self.held, None
        self.grace.cancel()
        async with self.sending:
            for message in held:
                await self._deliver(message)

    async def _deliver(self, message: dict[str, Any]) -> None:
        for event in message["events"]:
            if event["seq"] <= self.cursor:
                continue  # already sent by a resume
            if event["seq"] > self.cursor + 1:
                await self._fill_gap(event["seq"])
            await self.send_json(event)
            self.cursor = event["seq"]

    async def _fill_gap(self, before: int) -> None:
        missed = await database_sync_to_async(selectors.events_after)(self.conversation.pk, self.cursor, until=before - 1)
        for event in missed:
            await self.send_json(event)
            self.cursor = event["seq"]

    async def _error(self, message: str, *, code: str = "invalid") -> None:
        await self.send_json({"type": "error", "seq": None, "payload": {"message": message, "code": code}})
