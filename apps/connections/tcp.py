"""What the pool's own TCP protocols share: socket options, and writes gathered per loop turn.

Used by the Redis client (`resp.py`) and the direct links between web processes and pool
workers (`link.py`). Everything written during one event-loop turn leaves in one `write`:
one syscall here and one wake-up of the peer for, say, 32 concurrent calls' messages.
"""

from __future__ import annotations

import asyncio
import socket
from typing import cast

# TCP keepalive: an idle connection to a vanished host (a subscriber after a fail-over, a link to
# a lost worker) is noticed in ~25 s instead of the kernel's default two hours.
_KEEPALIVE = (("TCP_KEEPIDLE", 10), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 3))


class BatchedProtocol(asyncio.Protocol):
    """A stream protocol with `_write()`: queued, and flushed once at the end of the loop turn."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._outgoing: list[bytes] = []
        self._flush_scheduled = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport, though not always an `asyncio.Transport` subclass (uvloop's is not).
        self._transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            for name, value in _KEEPALIVE:
                if hasattr(socket, name):
                    sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)

    def _write(self, data: bytes) -> None:
        self._outgoing.append(data)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._transport is not None and not self._transport.is_closing() and self._outgoing:
            data = self._outgoing[0] if len(self._outgoing) == 1 else b"".join(self._outgoing)
            self._transport.write(data)
        self._outgoing.clear()
