"""Direct links between a web process and a pool worker: the Redis path's messages, without Redis.

A call on the Redis path crosses Redis twice (RPUSH → the worker's BLMPOP, PUBLISH → the
caller's subscription): four socket hops and two Redis wake-ups. A link is one TCP
connection per (web process, worker) carrying the same messages (`wire.py`), one JSON
document per line, both ways: two hops. Measured in `benchmarks/gateway.py` (figures in
`RemotePool`'s docstring).

Redis keeps what needs a broker: the registry (heartbeats, and each worker's link address
next to it), the inbox a caller falls back to while a worker cannot be reached directly,
the reply channel a worker falls back to when a caller's link broke during a call, and the
notifications every web process hears.

Trust: a worker publishes a random token with its address, and takes a link only after
its first line is that token. A link is trusted exactly as far as the Redis that carries
the token, as the inbox always was.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import socket
from collections.abc import Callable
from typing import Any

from apps.connections.tcp import BatchedProtocol

logger = logging.getLogger(__name__)

_ACCEPTED = b"ok"
_MAX_LINE = 64 * 1024 * 1024  # one message; the Redis path's own bound is Redis's 512 MB
OPEN_TIMEOUT = 2.0
BYE = '{"t":"bye"}'  # a worker's last message on a link: it runs nothing more sent on it
_PARTING = 1.0  # how long a stopping worker waits for its callers to close their ends

MessageHandler = Callable[[dict[str, Any]], None]


def links_key(prefix: str) -> str:
    """Redis hash: worker id → "host:port token" of its link listener."""
    return f"{prefix}:links"


class Link(BatchedProtocol):
    """One end of a link: `send()` a message; each message received goes to `on_message`."""

    def __init__(self, on_message: MessageHandler | None = None) -> None:
        super().__init__()
        self.on_message = on_message
        self._buffer = b""
        self._lost: asyncio.Future[None] = self._loop.create_future()

    @property
    def closed(self) -> bool:
        return self._lost.done() or self._transport is None or self._transport.is_closing()

    def send(self, text: str) -> None:
        if self.closed:
            raise ConnectionError("link closed")
        self._write(text.encode() + b"\n")

    def close(self) -> None:
        """Close once what is queued has been written."""
        self._flush()
        if self._transport is not None:
            self._transport.close()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._lost)

    def data_received(self, data: bytes) -> None:
        lines = (self._buffer + data).split(b"\n") if self._buffer else data.split(b"\n")
        self._buffer = lines.pop()
        if len(self._buffer) > _MAX_LINE:
            logger.warning("link message over %d bytes: link dropped", _MAX_LINE)
            self._abort()
            return
        for line in lines:
            self._on_line(line)

    def _on_line(self, line: bytes) -> None:
        if self.on_message is None:  # not yet trusted: the first line is the handshake
            self._handshake(line)
            return
        try:
            self.on_message(json.loads(line))
        except Exception:  # boundary: one bad message must not end the link
            logger.exception("link message handler failed")

    def _handshake(self, line: bytes) -> None:
        """Set `on_message` once the link is trusted."""

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._lost.done():
            self._lost.set_result(None)

    def _abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()


class _Accepting(Link):
    """A worker's end: the first line must be the token, else the link is dropped."""

    def __init__(self, token: bytes, on_message: Callable[[dict[str, Any], Link], None]) -> None:
        super().__init__()
        self._token = token
        self._handler = on_message

    def _handshake(self, line: bytes) -> None:
        if hmac.compare_digest(line, self._token):
            self.on_message = lambda message: self._handler(message, self)
            self._write(_ACCEPTED + b"\n")
        else:
            logger.warning("pool worker refused a link with a wrong token")
            self._abort()


class _Opening(Link):
    """A caller's end while it waits for the worker to accept its token."""

    def __init__(self, on_message: MessageHandler) -> None:
        super().__init__(None)
        self._on_message_later = on_message
        self.accepted: asyncio.Future[None] = self._loop.create_future()

    def _handshake(self, line: bytes) -> None:
        if line == _ACCEPTED and not self.accepted.done():
            self.on_message = self._on_message_later
            self.accepted.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.accepted.done():
            self.accepted.set_exception(ConnectionError("the pool worker refused the link"))
            self.accepted.exception()
        super().connection_lost(exc)


async def open_link(address: str, on_message: MessageHandler) -> Link:
    """Connect to a worker's `"host:port token"`; ConnectionError if it cannot be done in time."""
    where, _, token = address.partition(" ")
    host, _, port = where.rpartition(":")
    loop = asyncio.get_running_loop()
    link = _Opening(on_message)
    try:
        async with asyncio.timeout(OPEN_TIMEOUT):
            await loop.create_connection(lambda: link, host.strip("[]"), int(port))
            link._write(token.encode() + b"\n")
            await link.accepted
    except (OSError, TimeoutError, ValueError) as exc:
        link._abort()
        raise ConnectionError(f"cannot link to pool worker at {where}: {exc}") from exc
    return link


class LinkServer:
    """A worker's listener: `start()` it, publish `address`, `close()` it last."""

    def __init__(
        self, listen: str, token: str, on_message: Callable[[dict[str, Any], Link], None]
    ) -> None:
        host, _, port = listen.rpartition(":")
        self.host = host.strip("[]")
        self.port = int(port or 0)  # the one it got, once started
        self.token = token
        self.on_message = on_message
        self.links: set[Link] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        def accept() -> Link:
            link = _Accepting(self.token.encode(), self.on_message)
            self.links.add(link)
            link._lost.add_done_callback(lambda _: self.links.discard(link))
            return link

        self._server = await asyncio.get_running_loop().create_server(
            accept, self.host or None, self.port
        )
        self.port = self._server.sockets[0].getsockname()[1]

    def address(self, advertise: str, towards: tuple[str, int]) -> str:
        """`"host:port token"` for callers: `advertise`, else the listen host, else (listening on
        every interface) this host's address on the route to `towards` (Redis, which callers reach)."""
        host = advertise or self.host
        if host in ("", "0.0.0.0", "::"):
            host = _local_address(towards)
        if ":" in host:
            host = f"[{host}]"
        return f"{host}:{self.port} {self.token}"

    async def close(self) -> None:
        """Part from every caller, then close.

        A caller may have written a call just before this worker closes: closing a socket with
        unread data resets it, and the call is lost without a trace (the caller would wait for
        the worker's heartbeat to lapse, then report the call as possibly run). So each link
        gets a `BYE` first, written after every reply, and the worker reads on while callers close
        their ends: a caller that reads `BYE` knows its calls still unanswered on this link were
        never run (a stopping worker runs nothing new) and sends them to another worker."""
        if self._server is not None:
            self._server.close()
        links = [link for link in self.links if not link.closed]
        for link in links:
            link.send(BYE)
        await _until_closed(links, _PARTING)
        for link in list(self.links):
            link.close()
        await _until_closed(list(self.links), 2.0)


async def _until_closed(links: list[Link], timeout: float) -> None:
    """Until every one of `links` is closed, or `timeout` seconds."""
    if links:
        await asyncio.wait(
            [asyncio.ensure_future(link.wait_closed()) for link in links], timeout=timeout
        )


def _local_address(towards: tuple[str, int]) -> str:
    """The address of the interface this host uses to reach `towards` (no packet is sent)."""
    family = socket.AF_INET6 if ":" in towards[0] else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(towards)
            return probe.getsockname()[0]
        except OSError:
            return socket.gethostname()
