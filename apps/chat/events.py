"""A turn's two channels: events out to the conversation's clients, stop/approve decisions in.

Both go through the channel layer (Redis in production, in-memory embedded), so the worker that
runs a turn and the web process that holds a client's WebSocket need not be the same process.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
import weakref
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from apps.chat import services

logger = logging.getLogger(__name__)


def clients_group(conversation_id: uuid.UUID | str) -> str:
    return f"chat.{uuid.UUID(str(conversation_id)).hex}"


def control_group(conversation_id: uuid.UUID | str) -> str:
    return f"chatctl.{uuid.UUID(str(conversation_id)).hex}"


def _merge(batch: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """Adjacent text chunks queued while the previous batch was being written become one event."""
    merged: list[tuple[str, dict[str, Any]]] = []
    for kind, payload in batch:
        if kind == "text" and merged and merged[-1][0] == "text":
            merged[-1] = ("text", {"text": merged[-1][1]["text"] + payload["text"]})
        else:
            merged.append((kind, payload))
    return merged


class EventSink:
    """Numbers, stores, then broadcasts one turn's events, in order.

    `emit()` never waits: a writer task takes everything queued, writes it in one INSERT and
    sends it in one channel-layer message. An event is in the database before any client can see
    it, which is what makes `resume` lossless.
    """

    def __init__(self, conversation_id: uuid.UUID, first_seq: int) -> None:
        self.conversation_id = conversation_id
        self.group = clients_group(conversation_id)
        self.seq = first_seq - 1
        self.layer = get_channel_layer()
        self._pending: list[tuple[str, dict[str, Any]] | asyncio.Future[None]] = []
        self._wake = asyncio.Event()
        self._writer = asyncio.create_task(self._write_forever(), name=f"chat-events-{conversation_id}")

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        self._pending.append((kind, payload))
        self._wake.set()

    async def flush(self) -> None:
        """Returns once everything emitted so far is stored and sent."""
        done = asyncio.get_running_loop().create_future()
        self._pending.append(done)
        self._wake.set()
        await done

    async def close(self) -> None:
        await self.flush()
        self._writer.cancel()

    async def _write_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._pending = self._pending, []
            events = [item for item in batch if not isinstance(item, asyncio.Future)]
            try:
                if events:
                    await self._send(_merge(events))  # type: ignore[arg-type]
            except Exception:
                logger.exception("chat: could not store or send events of %s", self.conversation_id)
            for item in batch:
                if isinstance(item, asyncio.Future) and not item.done():
                    item.set_result(None)

    async def _send(self, batch: list[tuple[str, dict[str, Any]]]) -> None:
        events = []
        for kind, payload in batch:
            self.seq += 1
            events.append({"type": kind, "seq": self.seq, "payload": payload})
        await _writer().save(self.conversation_id, events)
        await self.layer.group_send(self.group, {"type": "chat.events", "events": events})


class _BatchWriter:
    """Stores the events of every turn on one loop, a transaction at a time, each holding all that
    was queued meanwhile: a hundred turns streaming at once write a few transactions per round, not
    hundreds (each one a database thread and connection busy for four round trips)."""

    def __init__(self) -> None:
        self._pending: list[tuple[uuid.UUID, list[dict[str, Any]], asyncio.Future[None]]] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def save(self, conversation_id: uuid.UUID, events: list[dict[str, Any]]) -> None:
        done = asyncio.get_running_loop().create_future()
        self._pending.append((conversation_id, events, done))
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._write_forever(), name="chat-events-writer")
        await done

    async def _write_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._pending = self._pending, []
            if not batch:
                continue
            outcomes = await self._store(batch)
            for (*_, done), outcome in zip(batch, outcomes):
                if done.done():
                    continue
                if outcome is None:
                    done.set_result(None)
                else:
                    done.set_exception(outcome)

    async def _store(self, batch) -> list[Exception | None]:
        save = sync_to_async(services.save_events_of, thread_sensitive=False)
        try:
            await save([(c, e) for c, e, _ in batch])
            return [None] * len(batch)
        except Exception as exc:  # noqa: BLE001 - each turn's sink reports its own
            if len(batch) == 1:
                return [exc]
        # One conversation's events failed (deleted meanwhile?): the others' are stored on their own.
        outcomes: list[Exception | None] = []
        for conversation_id, events, _ in batch:
            try:
                await save([(conversation_id, events)])
                outcomes.append(None)
            except Exception as exc:  # noqa: BLE001
                outcomes.append(exc)
        return outcomes


_writers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _BatchWriter] = weakref.WeakKeyDictionary()


def _writer() -> _BatchWriter:
    loop = asyncio.get_running_loop()
    writer = _writers.get(loop)
    if writer is None:
        writer = _writers[loop] = _BatchWriter()
    return writer


class Control:
    """Stop and approve decisions for the running turn of one conversation."""

    def __init__(self, conversation_id: uuid.UUID) -> None:
        self.group = control_group(conversation_id)
        self.layer = get_channel_layer()
        self.stopped = asyncio.Event()
        self._approvals: dict[str, asyncio.Future[bool]] = {}
        self._channel = ""
        self._reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Control:
        self._channel = await self.layer.new_channel("chatctl.")
        await self.layer.group_add(self.group, self._channel)
        self._reader = asyncio.create_task(self._read_forever())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._reader is not None:
            self._reader.cancel()
        try:
            await self.layer.group_discard(self.group, self._channel)
        except Exception:
            logger.exception("chat: could not leave %s", self.group)

    async def approval(self, call_id: str) -> bool:
        future = self._approvals.setdefault(call_id, asyncio.get_running_loop().create_future())
        return await future

    async def _read_forever(self) -> None:
        while True:
            try:
                message = await self.layer.receive(self._channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("chat: control channel failed; retrying")
                await asyncio.sleep(1)
                continue
            self._handle(message)

    def _handle(self, message: dict[str, Any]) -> None:
        if message.get("action") == "stop":
            self.stopped.set()
        elif message.get("action") == "approve":
            future = self._approvals.setdefault(message["call_id"], asyncio.get_running_loop().create_future())
            if not future.done():
                future.set_result(bool(message["allow"]))


async def send_control(conversation_id: uuid.UUID | str, action: str, **fields: Any) -> None:
    await get_channel_layer().group_send(control_group(conversation_id), {"type": "chat.control", "action": action, **fields})
