"""`/ws/runs/<run-id>/`: a run's live events (`status`, `step` with the round's tool calls, `end`)
for its owner's page. Steps are in the database first, so a page that connects late reads the
earlier ones from `GET /api/runs/<id>/` and takes the rest from here."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from apps.chat.auth import websocket_user
from apps.chat.runs import selectors
from apps.chat.runs.loop import run_group


class RunConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        from apps.chat import runtime

        runtime.bind_web_loop()
        user = await websocket_user(self.scope)
        run_id = self.scope["url_route"]["kwargs"]["run_id"]
        run = await sync_to_async(selectors.run_for, thread_sensitive=False)(user, run_id)
        if run is None:
            await self.close(code=4403)  # also for another user's run
            return
        self.group = run_group(run.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        pass  # commands go through the API (cancel, resume); this socket only listens

    async def run_event(self, message: dict[str, Any]) -> None:
        await self.send_json(message["event"])
