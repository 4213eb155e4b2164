"""Streamable HTTP resumability: every SSE event of a session gets an id, and is kept a while.

A client whose stream drops sends `GET` with `Last-Event-ID`; the events after that id are
replayed from this store, on any web process, and the stream goes on where it stopped. A POST's
stream keeps running when its connection drops (MCP: a disconnection is not a cancellation), so
its remaining events, the response last, are stored for the client to fetch.

Bounded: the last MAX_EVENTS events of each stream, for TTL seconds; a Redis stream per SSE
stream in production, memory when embedded. Event ids are `<stream id>/<position>`, and stream ids
`<session id>.<suffix>`, so an id names its stream and its session.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass

from redis.exceptions import ResponseError

from apps.core import hotstate

PREFIX = "mcphub:gw:ev:"
MAX_EVENTS = 1000
TTL = 3600
STREAM_EVENT = "stream.event"  # a detached POST's event, published as it is stored
STREAM_RESYNC = "stream.resync"  # "read the store again": events went to a connection now closed
GET_SUFFIX = "get"


@dataclass(frozen=True)
class Event:
    id: str
    data: str
    last: bool  # the stream's final event (a POST's response)


def post_stream_id(session_id: str) -> str:
    return f"{session_id}.{secrets.token_urlsafe(6)}"


def get_stream_id(session_id: str) -> str:
    """The session's standalone GET stream keeps one id across reconnects: its events continue."""
    return f"{session_id}.{GET_SUFFIX}"


def stream_group(stream_id: str) -> str:
    return f"mcphub.stream.{stream_id}"


def parse(event_id: str, session_id: str) -> tuple[str, str] | None:
    """(stream id, position) of an event id from this session's streams, else None."""
    stream_id, _, position = event_id.partition("/")
    if not position or stream_id.rpartition(".")[0] != session_id:
        return None
    return stream_id, position


async def append(stream_id: str, data: str, *, last: bool = False) -> Event:
    client = hotstate.async_redis()
    if client is None:
        return _memory.append(stream_id, data, last)
    key = PREFIX + stream_id
    async with client.pipeline(transaction=False) as pipe:
        pipe.xadd(key, {"d": data, "l": "1" if last else ""}, maxlen=MAX_EVENTS, approximate=True)
        pipe.expire(key, TTL)
        position, _ = await pipe.execute()
    return Event(f"{stream_id}/{position.decode()}", data, last)


async def replay(stream_id: str, after: str) -> list[Event]:
    """The stream's stored events after position `after`, oldest first."""
    client = hotstate.async_redis()
    if client is None:
        return _memory.after(stream_id, after)
    try:
        entries = await client.xrange(PREFIX + stream_id, min="(" + after, max="+")
    except ResponseError:  # a malformed position from the client: nothing to replay
        return []
    return [
        Event(f"{stream_id}/{xid.decode()}", fields[b"d"].decode(), bool(fields.get(b"l")))
        for xid, fields in entries
    ]


class _MemoryStreams:
    """The embedded stand-in: a bounded deque per stream, forgotten TTL seconds after its last event."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[str, tuple[deque[tuple[int, str, bool]], int, float]] = {}

    def append(self, stream_id: str, data: str, last: bool) -> Event:
        with self._lock:
            self._expire()
            events, position, _ = self._streams.get(stream_id, (deque(maxlen=MAX_EVENTS), 0, 0.0))
            position += 1
            events.append((position, data, last))
            self._streams[stream_id] = (events, position, time.monotonic() + TTL)
        return Event(f"{stream_id}/{position}", data, last)

    def after(self, stream_id: str, after: str) -> list[Event]:
        if not after.isdigit():
            return []
        with self._lock:
            events = list(self._streams.get(stream_id, ((), 0, 0.0))[0])
        return [Event(f"{stream_id}/{p}", data, last) for p, data, last in events if p > int(after)]

    def _expire(self) -> None:
        now = time.monotonic()
        for stream_id in [s for s, (_, _, expires) in self._streams.items() if expires < now]:
            del self._streams[stream_id]


_memory = _MemoryStreams()
