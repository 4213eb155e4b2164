"""This web process's single channel-layer inbox.

One subscription per process, not per session: events for groups (an endpoint's tool changes, a
session's messages) and replies to server→client requests are read by one task and handed to
local queues and futures. A reply may arrive at any web process: the process that asked records
its inbox name in shared state, and the receiving process forwards the reply there.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Any

from channels.layers import get_channel_layer

from apps.core import hotstate, outage
from apps.core.channel_layer import INBOX_PREFIX
from apps.toolsets.events import announce_changes_of_other_processes

logger = logging.getLogger(__name__)

REPLY_ROUTE_PREFIX = "mcphub:gw:rr:"
REPLY_ROUTE_TTL = 3600
RPC_REPLY = "rpc.reply"


class Mailbox:
    def __init__(self) -> None:
        self.layer = get_channel_layer()
        self.channel: str | None = None
        self._started = asyncio.Lock()
        self._reader: asyncio.Task[None] | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._groups: dict[str, set[asyncio.Queue[dict[str, Any]]]] = defaultdict(set)
        self._replies: dict[str, asyncio.Future[dict[str, Any]]] = {}

    async def start(self) -> None:
        async with self._started:
            if self.channel is None:
                self.channel = await self.layer.new_channel(
                    f"{INBOX_PREFIX}web."
                )  # replies are `send` here
                self._reader = asyncio.create_task(self._read(), name="mcphub-mailbox")
                if hotstate.async_redis() is None:  # embedded: hear what shells change, too
                    self._watcher = asyncio.create_task(
                        announce_changes_of_other_processes(), name="mcphub-changes"
                    )

    async def join(self, group: str, queue: asyncio.Queue[dict[str, Any]]) -> None:
        await self.start()
        first = not self._groups[group]
        self._groups[group].add(queue)
        if first:
            await self.layer.group_add(group, self.channel)

    async def leave(self, group: str, queue: asyncio.Queue[dict[str, Any]]) -> None:
        members = self._groups.get(group)
        if members is None:
            return
        members.discard(queue)
        if not members:
            del self._groups[group]
            await self.layer.group_discard(group, self.channel)

    async def publish(self, group: str, message: dict[str, Any]) -> None:
        await self.layer.group_send(group, {**message, "group": group})

    async def expect_reply(self, request_id: str) -> asyncio.Future[dict[str, Any]]:
        """A future for the client's answer to our request `request_id`, wherever it is posted."""
        await self.start()
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._replies[request_id] = future
        await _set_route(request_id, self.channel)
        return future

    def forget_reply(self, request_id: str) -> None:
        self._replies.pop(request_id, None)

    async def deliver_reply(self, request_id: str, message: dict[str, Any]) -> bool:
        """Hand a client's response to the process waiting for it; False if nobody waits."""
        future = self._replies.pop(request_id, None)
        if future is not None:
            if not future.done():
                future.set_result(message)
            return True
        channel = await _get_route(request_id)
        if channel is None:
            return False
        await self.layer.send(channel, {"type": RPC_REPLY, "id": request_id, "message": message})
        return True

    async def _read(self) -> None:
        while True:
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except hotstate.OUTAGE_ERRORS as exc:
                outage.note(exc)
                await asyncio.sleep(0.1)
                continue
            except Exception:  # noqa: BLE001 - a bad message must not kill the inbox
                logger.exception("mailbox receive failed")
                await asyncio.sleep(0.1)
                continue
            self._dispatch(message)

    def _dispatch(self, message: dict[str, Any]) -> None:
        if message.get("type") == RPC_REPLY:
            future = self._replies.pop(message.get("id", ""), None)
            if future is not None and not future.done():
                future.set_result(message["message"])
            return
        for queue in list(self._groups.get(message.get("group", ""), ())):
            queue.put_nowait(message)


async def _set_route(request_id: str, channel: str | None) -> None:
    client = hotstate.async_redis()
    if client is None:
        hotstate.memory.set(REPLY_ROUTE_PREFIX + request_id, channel, REPLY_ROUTE_TTL)
    else:
        await client.set(REPLY_ROUTE_PREFIX + request_id, channel or "", ex=REPLY_ROUTE_TTL)


async def _get_route(request_id: str) -> str | None:
    client = hotstate.async_redis()
    if client is None:
        return hotstate.memory.get(REPLY_ROUTE_PREFIX + request_id)  # type: ignore[return-value]
    raw = await client.get(REPLY_ROUTE_PREFIX + request_id)
    return raw.decode() if raw else None


_mailboxes: dict[asyncio.AbstractEventLoop, Mailbox] = {}


def mailbox() -> Mailbox:
    loop = asyncio.get_running_loop()
    if loop not in _mailboxes:
        _mailboxes[loop] = Mailbox()
    return _mailboxes[loop]
