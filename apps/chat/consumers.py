"""`/ws/chat/<conversation-id>/`: moves messages between a client and the conversation's turns.

Client → server: `message` {text, prompt?: {name, arguments}, resources?: [uri]}, `stop`,
`approve` {call_id, allow}, `elicit` {id, action, content} (the user's answer to a backend's
elicitation), `resume` {after}; and for the `/` and `@` menus `items`, `complete`
{ref, argument, context?} and `read` {uri}, each answered (`items`, `completion`, `resource`) to
this socket alone with `seq: null` and the request's `id`. The first four change the conversation: a token that may only read (`api_read`) gets an `error` with code
`forbidden` for them (apps.chat.auth).
Server → client: the conversation's events (`user_message` opens each turn; then `status`, `text`,
`tool_call`, `approval_required`, `elicitation_required` / `elicitation_answered`, `tool_result`,
`error`, and `end` with the turn's token usage),
each `{"type", "seq", "payload"}`, in `seq` order without gaps or repeats; an `error` about this
connection's own request has `seq: null` (it is not part of the conversation and is not replayed).
How live events wait behind a `resume`: apps.chat.resumable.
"""

from __future__ import annotations

from typing import Any

from apps.chat import context_items, elicitation, events, selectors, services
from apps.chat.resumable import ResumableConsumer, database_sync_to_async


class ChatConsumer(ResumableConsumer):
    client_types = ("message", "stop", "approve", "elicit", "resume", "items", "complete", "read")
    # Asking what the endpoint offers reads, as the gateway's lists, completions and reads do.
    read_types = frozenset({"resume", "items", "complete", "read"})

    async def connect(self) -> None:
        from apps.chat import runtime

        runtime.bind_web_loop()
        self.conversation = await self.open(
            self.scope["url_route"]["kwargs"]["conversation_id"],
            events.clients_group,
            selectors.opened,
        )

    # -- client messages -------------------------------------------------------------------

    async def _on_message(self, payload: dict[str, Any]) -> None:
        context = None
        if payload.get("prompt") is not None or payload.get("resources"):
            context = await context_items.gather(
                await self._view(), prompt=payload.get("prompt"), resources=payload.get("resources")
            )
        await database_sync_to_async(services.start_turn)(
            conversation=self.conversation, text=payload.get("text"), context=context
        )

    # -- the `/` and `@` menus: answered to this socket only (`seq: null`), with the request's `id`

    async def _on_items(self, payload: dict[str, Any]) -> None:
        await self._answer("items", payload, context_items.menu(await self._view()))

    async def _on_complete(self, payload: dict[str, Any]) -> None:
        completion = await context_items.complete(
            await self._view(), payload.get("ref"), payload.get("argument"), payload.get("context")
        )
        await self._answer("completion", payload, completion)

    async def _on_read(self, payload: dict[str, Any]) -> None:
        contents = await context_items.read_resource(await self._view(), payload.get("uri"))
        await self._answer("resource", payload, {"uri": payload["uri"], "contents": contents})

    async def _view(self):
        return await context_items.endpoint_view(
            self.conversation.owner_id, self.conversation.endpoint_id
        )

    async def _answer(self, kind: str, request: dict[str, Any], payload: dict[str, Any]) -> None:
        await self.send_json(
            {"type": kind, "seq": None, "payload": {**payload, "id": request.get("id")}}
        )

    async def _on_stop(self, payload: dict[str, Any]) -> None:
        await database_sync_to_async(services.request_stop)(conversation=self.conversation)
        await events.send_control(self.conversation.pk, "stop")

    async def _on_approve(self, payload: dict[str, Any]) -> None:
        call_id, allow, edit = payload.get("call_id"), payload.get("allow"), payload.get("edit")
        await database_sync_to_async(services.check_approval)(
            conversation=self.conversation, call_id=call_id, allow=allow, edit=edit
        )
        await events.send_control(
            self.conversation.pk, "approve", call_id=call_id, allow=allow, edit=edit
        )

    async def _on_elicit(self, payload: dict[str, Any]) -> None:
        request_id, action, content = elicitation.parse_answer(payload)
        await database_sync_to_async(services.check_running)(conversation=self.conversation)
        await events.send_control(
            self.conversation.pk, "elicit", id=request_id, answer=action, content=content
        )

    async def _replay(self, after: int) -> None:
        stored = await database_sync_to_async(selectors.events_after)(self.conversation.pk, after)
        for event in stored:
            await self.send_json(event)
        self.cursor = stored[-1]["seq"] if stored else max(after, self.cursor)

    # -- events from the turn --------------------------------------------------------------

    async def chat_events(self, message: dict[str, Any]) -> None:
        await self._live(message)

    async def _deliver(self, message: dict[str, Any]) -> None:
        for event in message["events"]:
            if event["seq"] <= self.cursor:
                continue  # already sent by a resume
            if event["seq"] > self.cursor + 1:
                await self._fill_gap(event["seq"])
            await self.send_json(event)
            self.cursor = event["seq"]

    async def _fill_gap(self, before: int) -> None:
        missed = await database_sync_to_async(selectors.events_after)(
            self.conversation.pk, self.cursor, until=before - 1
        )
        for event in missed:
            await self.send_json(event)
            self.cursor = event["seq"]
