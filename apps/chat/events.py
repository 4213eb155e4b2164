"""A turn's two channels: events out to the conversation's clients, stop/approve decisions in.

Both go through the channel layer (Redis in production, in-memory embedded), so the worker that
runs a turn and the web process that holds a client's WebSocket need not be the same process.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import Any

from channels.layers import get_channel_layer
from django.db import models

from apps.chat import records
from apps.chat.journal import Fence, journal
from apps.core.channel_layer import group_send_patiently
from apps.core.hotstate import OUTAGE_ERRORS

logger = logging.getLogger(__name__)
# Seconds the writer waits for Redis to come back before it leaves events to the clients' resume
# (they are stored already): a restart takes a few.
SEND_PATIENCE = 15.0


def clients_group(conversation_id: uuid.UUID | str) -> str:
    return f"chat.{uuid.UUID(str(conversation_id)).hex}"


def control_group(conversation_id: uuid.UUID | str) -> str:
    return f"chatctl.{uuid.UUID(str(conversation_id)).hex}"


def _merge(batch: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """Adjacent text (or reasoning) chunks queued while the previous batch was being written become
    one event, and a call's adjacent progress events its latest one."""
    merged: list[tuple[str, dict[str, Any]]] = []
    for kind, payload in batch:
        if kind in ("text", "reasoning") and merged and merged[-1][0] == kind:
            merged[-1] = (kind, {"text": merged[-1][1]["text"] + payload["text"]})
        elif (
            kind == "tool_progress"
            and merged
            and merged[-1][0] == kind
            and (merged[-1][1]["id"] == payload["id"])
        ):
            merged[-1] = (kind, payload)  # a call's latest progress says all its earlier ones did
        else:
            merged.append((kind, payload))
    return merged


class _Stored:
    __slots__ = ("event",)

    def __init__(self, event: dict[str, Any]) -> None:
        self.event = event


class EventSink:
    """Numbers, stores, then broadcasts one turn's events, in order, with the rows they describe.

    `emit()` and `store()` never wait: a writer task takes everything queued, writes it in one
    journal write (the loop's shared transaction) and sends the events in one channel-layer message.
    An event, and every row stored before it, is in the database before any client can see it,
    which is what makes `resume` lossless and a reloaded page show what the events showed.
    """

    def __init__(
        self,
        conversation_id: uuid.UUID,
        first_seq: int,
        *,
        fence: Fence | None = None,
        on_lost: Callable[[], object] | None = None,
    ) -> None:
        self.conversation_id = conversation_id
        # Run in each write's transaction: raises records.LeaseLost once the turn is another
        # worker's; then nothing more is stored or sent, `on_lost` is called and `flush` raises it.
        self.fence, self.on_lost = fence, on_lost
        self.lost = False
        self.group = clients_group(conversation_id)
        self.seq = first_seq - 1
        self.layer = get_channel_layer()
        self._pending: list[tuple[str, dict[str, Any]] | models.Model | asyncio.Future[None]] = []
        self._wake = asyncio.Event()
        self._writer = asyncio.create_task(
            self._write_forever(), name=f"chat-events-{conversation_id}"
        )

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        self._pending.append((kind, payload))
        self._wake.set()

    def announce(self, event: dict[str, Any]) -> None:
        """Send an event stored already (numbered, in the database), in order with the others."""
        self._pending.append(_Stored(event))
        self._wake.set()

    def store(self, row: models.Model) -> None:
        """A row (a message) written with the next events, before they are sent."""
        self._pending.append(row)
        self._wake.set()

    async def flush(self) -> None:
        """Returns once everything emitted and stored so far is written and sent."""
        done = asyncio.get_running_loop().create_future()
        self._pending.append(done)
        self._wake.set()
        await done

    async def close(self) -> None:
        try:
            await self.flush()
        except records.LeaseLost:
            pass  # its new worker writes the rest
        self._writer.cancel()

    async def _write_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._pending = self._pending, []
            rows = [item for item in batch if isinstance(item, models.Model)]
            events = [item for item in batch if isinstance(item, tuple)]
            stored = [item.event for item in batch if isinstance(item, _Stored)]
            try:
                if (rows or events or stored) and not self.lost:
                    await self._send(rows, _merge(events), stored)
            except records.LeaseLost:
                self.lost = True
                logger.warning(
                    "chat: a turn of %s was taken over by another worker; nothing more of it is "
                    "stored here",
                    self.conversation_id,
                )
                if self.on_lost is not None:
                    self.on_lost()
            except Exception:
                logger.exception("chat: could not store or send events of %s", self.conversation_id)
            for item in batch:
                if isinstance(item, asyncio.Future) and not item.done():
                    if self.lost:
                        item.set_exception(records.LeaseLost(self.conversation_id))
                    else:
                        item.set_result(None)

    async def _send(
        self,
        rows: list[models.Model],
        batch: list[tuple[str, dict[str, Any]]],
        stored: list[dict[str, Any]],
    ) -> None:
        events = []
        for kind, payload in batch:
            self.seq += 1
            events.append({"type": kind, "seq": self.seq, "payload": payload})
        if rows or events:
            await journal().write(
                rows=[*rows, *records.event_rows(self.conversation_id, events)],
                fences=[self.fence] if self.fence is not None else (),
            )
        events = [*stored, *events]
        if events:
            message = {"type": "chat.events", "events": events}
            await group_send_patiently(self.layer, self.group, message, patience=SEND_PATIENCE)


class Control:
    """Stop and approve decisions for the running turn of one conversation."""

    def __init__(self, conversation_id: uuid.UUID) -> None:
        self.group = control_group(conversation_id)
        self.layer = get_channel_layer()
        self.stopped = asyncio.Event()
        self._approvals: dict[str, asyncio.Future[bool]] = {}
        self._answers: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._links: dict[str, str] = {}  # a waited-on URL elicitation's elicitationId → its id
        self._channel = ""
        self._reader: asyncio.Task[None] | None = None
        self._joining: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Control:
        self._channel = await self.layer.new_channel("chatctl.")
        self._reader = asyncio.create_task(self._read_forever())
        # Joined beside the turn's (or run's) start, not before it: the SUBSCRIBE is a Redis round
        # trip under the layer's subscription lock, which a hundred turns starting at once queue
        # for, and the model is asked meanwhile. A stop sent before the join completes is caught
        # by the heartbeat's backstop, as one sent before the turn started always was.
        self._joining = asyncio.create_task(self._join())
        return self

    async def _join(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SEND_PATIENCE
        while True:  # a Redis restart delays the turn or run, it does not fail it
            try:
                await self.layer.group_add(self.group, self._channel)
                return
            except OUTAGE_ERRORS:
                if loop.time() > deadline:
                    logger.warning(
                        "chat: could not join %s: stops wait for the heartbeat", self.group
                    )
                    return
                await asyncio.sleep(0.5)

    async def joined(self) -> None:
        """Returns once the control group is joined (or joining gave up): a check of the stored
        stop flag made after it misses no stop."""
        if self._joining is not None:
            await asyncio.shield(self._joining)

    async def __aexit__(self, *exc: object) -> None:
        for task in (self._reader, self._joining):
            if task is not None:
                task.cancel()
        if self._joining is not None:
            await asyncio.gather(self._joining, return_exceptions=True)
        try:
            await self.layer.group_discard(self.group, self._channel)
        except Exception:
            logger.exception("chat: could not leave %s", self.group)

    async def approval(self, call_id: str) -> bool | dict[str, Any]:
        """The user's decision on `call_id`: allow, deny, or a sampling request's changes."""
        future = self._approvals.setdefault(call_id, asyncio.get_running_loop().create_future())
        try:
            return await future
        finally:
            self._approvals.pop(call_id, None)  # a rejected edit waits for the next decision

    async def answer(self, request_id: str, link: str | None = None) -> dict[str, Any]:
        """The user's next answer ({action, content}) to a backend's elicitation `request_id`;
        `link`: a URL elicitation's elicitationId, whose completion (`complete`) answers it too."""
        future = self._answers.setdefault(request_id, asyncio.get_running_loop().create_future())
        if link:
            self._links[link] = request_id
        try:
            return await future
        finally:
            self._answers.pop(request_id, None)  # a rejected answer waits for the next one
            if link:
                self._links.pop(link, None)

    def complete(self, elicitation_id: str) -> None:
        """A backend says the URL elicitation `elicitation_id` is done: a wait for the user's
        answer to it ends, as if they had opened its link."""
        request_id = self._links.get(elicitation_id)
        if request_id is not None:
            self.give(request_id, {"action": "accept", "content": None})

    def give(self, request_id: str, answer: dict[str, Any]) -> None:
        """The answer ({action, content}) to elicitation `request_id`; kept if it comes before
        the turn or run waits for it (it then takes it at once)."""
        future = self._answers.setdefault(request_id, asyncio.get_running_loop().create_future())
        if not future.done():
            future.set_result(answer)

    async def _read_forever(self) -> None:
        while True:
            try:
                message = await self.layer.receive(self._channel)
            except asyncio.CancelledError:
                raise
            except OUTAGE_ERRORS:
                await asyncio.sleep(1)  # Redis restarting: the channel layer logs it once
                continue
            except Exception:
                logger.exception("chat: control channel failed; retrying")
                await asyncio.sleep(1)
                continue
            self._handle(message)

    def _handle(self, message: dict[str, Any]) -> None:
        if message.get("action") == "stop":
            self.stopped.set()
        elif message.get("action") == "approve":
            future = self._approvals.setdefault(
                message["call_id"], asyncio.get_running_loop().create_future()
            )
            if not future.done():
                # A sampling request allowed with the user's changes (host.check_edit) gets them.
                edit = message.get("edit")
                future.set_result(edit if message["allow"] and edit else bool(message["allow"]))
        elif message.get("action") == "elicit":
            self.give(message["id"], {"action": message["answer"], "content": message["content"]})


async def send_control(conversation_id: uuid.UUID | str, action: str, **fields: Any) -> None:
    await get_channel_layer().group_send(
        control_group(conversation_id), {"type": "chat.control", "action": action, **fields}
    )
