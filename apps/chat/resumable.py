"""What the chat and run WebSockets share: a client that (re)connects sends `resume` with the last
`seq` it saw and gets every stored event after it, then the live ones, none lost and none twice.

The consumer joins its channel-layer group before it reads anything, so whatever is stored after
its read also arrives through the group; live events are held until the replay is sent, and each
consumer's `_deliver` drops those the replay already covered.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from apps.chat.auth import NOBODY, SocketAccess, socket_access
from apps.core.errors import UserError

# Live events wait this long after the socket opens for the client to say where it is: a
# reconnecting client's `resume` (the pages send one on every open) must be answered before any
# newer live event, or it would see e.g. 21 before the replayed 5..20. A client's first message of
# any kind ends the wait at once; events are held, never dropped.
RESUME_GRACE_SECONDS = 0.25

# Not Channels' thread-sensitive default: that runs every socket's queries on one thread, so a
# hundred clients sending at once would wait on each other; nor the loop's default executor (cores
# + 4 threads): a hundred messages at once queued ~2 s behind six database calls at a time. Each
# thread keeps its database connection.
_DB_THREADS = ThreadPoolExecutor(12, thread_name_prefix="chat-ws-db")


T = TypeVar("T")


def database_sync_to_async(fn):
    return sync_to_async(fn, thread_sensitive=False, executor=_DB_THREADS)


class Refused(UserError):
    """A client message the socket refuses: answered with an `error` event, nothing changes."""


class ResumableConsumer(AsyncJsonWebsocketConsumer):
    """Subclasses set `client_types` (each `kind` handled by `_on_<kind>(payload)`, `resume` given),
    refuse by raising a `UserError` (their services' errors are ones), implement `_replay(after)` and
    `_deliver(message)`, and connect with `open()`.

    Every client type but those in `read_types` changes something: a socket whose token may only
    read (apps.chat.auth) gets an `error` (code `forbidden`) for it, and its handler never runs."""

    client_types: tuple[str, ...] = ("resume",)
    read_types: frozenset[str] = frozenset({"resume"})
    group: str | None = None
    grace: asyncio.TimerHandle | None = None
    access: SocketAccess = NOBODY

    async def dispatch(self, message: dict[str, Any]) -> None:
        """As Channels' own, without its `close_old_connections()` before every message: that hop to
        the one thread-sensitive thread was ~18% of a run socket's CPU (py-spy, 467 sockets opened,
        resumed and closed), paid again for every event relayed. These sockets never query on that
        thread (their queries run on _DB_THREADS, each keeping its pooled connection), so it had
        nothing to close; the session middleware's queries close their own around themselves."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def open(
        self,
        key: str,
        group: Callable[[uuid.UUID], str],
        find: Callable[[Any, uuid.UUID], tuple[T, int] | None],
    ) -> T | None:
        """Accept the socket for what `key` (a UUID from the URL) names, if it is the user's.

        Joins `group(id)` first, then in ONE database hop finds who is on the socket and what they
        opened: `find(user, id)` returns (it, the last seq stored) or None. Joined before the read,
        so whatever is stored after it also arrives through the group; live events wait behind a
        `resume` from then on. None (not theirs, no such thing, a malformed id, a token that may
        not follow it): the group is left and the socket closed with 4403 before its handshake
        completes, sent nothing. One hop where there were three (user, lookup, count): ~1.5 ms of
        the web process's CPU per socket; what the token may do is known from then on."""
        try:
            key_id = uuid.UUID(key)
        except ValueError:
            await self.close(code=4403)
            return None
        self.group = group(key_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        self.access, found = await database_sync_to_async(lambda: self._find(find, key_id))()
        if found is None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.group = None
            await self.close(code=4403)  # also for another user's: nothing to learn
            return None
        opened, self.cursor = found
        self.hold_live_events()
        await self.accept()
        return opened

    def _find(
        self, find: Callable[[Any, uuid.UUID], tuple[T, int] | None], key_id: uuid.UUID
    ) -> tuple[SocketAccess, tuple[T, int] | None]:
        access = socket_access(self.scope)
        return access, find(access.user, key_id)

    def hold_live_events(self) -> None:
        self.held: list[dict[str, Any]] | None = []
        self.sending = asyncio.Lock()
        self.grace = asyncio.get_running_loop().call_later(
            RESUME_GRACE_SECONDS, lambda: asyncio.ensure_future(self._go_live())
        )

    async def disconnect(self, code: int) -> None:
        if self.grace is not None:
            self.grace.cancel()
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        if text_data is None:
            await self._error("Send JSON text frames.")
            return
        try:
            content = json.loads(text_data)
        except ValueError:
            await self._error("Malformed JSON.")
            return
        await self.receive_json(content)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        if kind not in self.client_types:
            await self._error(
                f"Unknown message type {kind!r}: send one of {', '.join(self.client_types)}."
            )
            return
        refusal = None if kind in self.read_types else self.access.refusal(write=True)
        if refusal is not None:
            await self._error(refusal, code="forbidden")
            return
        payload = content.get("payload", {})
        if not isinstance(payload, dict):
            await self._error("'payload' must be an object.")
            return
        try:
            if kind != "resume":
                await self._go_live()
            await getattr(self, f"_on_{kind}")(payload)
        except UserError as exc:  # Refused here, or the services' own refusals
            await self._error(exc.message, code=exc.code)
        finally:
            if kind == "resume":
                await self._go_live()  # after the replay: held live events follow it in order

    async def _on_resume(self, payload: dict[str, Any]) -> None:
        after = payload.get("after", 0)
        if not isinstance(after, int) or isinstance(after, bool) or after < 0:
            raise Refused("'resume' needs 'after': a sequence number (0 for everything).")
        async with self.sending:
            await self._replay(after)

    async def _replay(self, after: int) -> None:
        raise NotImplementedError

    async def _deliver(self, message: dict[str, Any]) -> None:
        raise NotImplementedError

    async def _live(self, message: dict[str, Any]) -> None:
        """A channel-layer message: held until the replay is sent, then delivered in order."""
        if self.held is not None:
            self.held.append(message)
            return
        async with self.sending:
            await self._deliver(message)

    async def _go_live(self) -> None:
        if self.held is None:
            return
        held, self.held = self.held, None
        if self.grace is not None:
            self.grace.cancel()
        async with self.sending:
            for message in held:
                await self._deliver(message)

    async def _error(self, message: str, *, code: str = "invalid") -> None:
        """About this connection's own request: `seq: null`, not part of the stream, never replayed."""
        await self.send_json(
            {"type": "error", "seq": None, "payload": {"message": message, "code": code}}
        )
