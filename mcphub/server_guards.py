"""Hardening of the HTTP server the hub runs under: uvicorn's httptools protocol, subclassed here
and passed to uvicorn as its `http` protocol (mcphub/server.py).

- The access log never carries a raw token: uvicorn writes its lines through the hub's logging
  (mcphub/server.py), whose handlers redact `/mcp/t/<token>/` paths (apps/accounts/log_filters.py)
  before writing. Requests to MCP endpoints (`/mcp/...`) get no line at all unless `MCPHUB_MCP_ACCESS_LOG` is
  set: each tool call is in the call log already, and formatting, writing and flushing the line
  cost ~1 % of the web process's CPU per call (py-spy, production web under load).
- A request must arrive whole (request line, headers and body) within
  `MCPHUB_REQUEST_READ_TIMEOUT` seconds of its first byte, else 408 and the connection closes:
  uvicorn's own keep-alive timeout only runs between requests, so a client dripping bytes, or
  declaring a Content-Length larger than what it sends, would otherwise hold the connection (and,
  uvicorn starting the application once the headers are in, a request task) for hours.
- A request still arriving after half that time is slow. One client address may hold at most
  `MCPHUB_MAX_SLOW_REQUESTS_PER_CLIENT` slow requests: the next one to turn slow is answered 429
  and closed, and while the address holds that many, its new requests are answered 429 at once.
  Requests being served, slow tool calls and open streams never count, nor do requests merely
  in progress: a single-threaded client starting many requests at once writes all their headers
  before any body, so dozens of ordinary requests from one address are half-arrived together.

Both apply in the server's protocol before the application gets the request: as under Daphne, a
request reaches it once it has arrived whole (uvicorn would start it with the headers, and it could
answer, say 401, a request that then times out), so they cover every path (pages, API, MCP
endpoints) in both shapes. A request that
arrives in one read (nearly all) arms no timer: the clock is only set when a read leaves it partial.
"""

from __future__ import annotations

import json
import logging
from collections import Counter

from django.conf import settings
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from apps.core.client_address import client_address

logger = logging.getLogger("mcphub.server")
_LINGER = 2.0  # seconds a refused connection reads on after its reply (`_reply_and_close`)

_slow: Counter[str] = Counter()  # client address -> requests still arriving past the bound


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the arrival clock, the slow-request cap and the quiet
    MCP access log of this module's docstring."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._read_timeout = float(settings.MCPHUB_REQUEST_READ_TIMEOUT)
        self._per_client = settings.MCPHUB_MAX_SLOW_REQUESTS_PER_CLIENT
        self._mcp_access_log = settings.MCPHUB_MCP_ACCESS_LOG
        self._arriving = False  # from a request's first byte until it has arrived whole
        self._timers: tuple | None = None
        self._slow_address: str | None = None  # set while the request counts against it
        self._held: tuple | None = None  # (cycle, app) of a request whose body is still arriving
        self._lingering = False  # refused with a reply: closing once the client stops sending

    # -- uvicorn's protocol and parser callbacks ---------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            return  # answered and closing: what still arrives is read and dropped
        if not self._arriving and data and self._read_timeout > 0:
            peer = self._peer()  # only the socket is known before the headers
            if self._per_client and _slow[peer] >= self._per_client:
                self._refuse_slow(peer)
                return
            self._arriving = True
        super().data_received(data)
        if self._arriving and self._timers is None and not self.transport.is_closing():
            self._timers = (
                self.loop.call_later(self._read_timeout / 2, self._turned_slow),
                self.loop.call_later(self._read_timeout, self._timed_out),
            )

    def on_message_begin(self) -> None:
        super().on_message_begin()
        # A request that began in the same read as the previous one ended (pipelined).
        self._arriving = self._read_timeout > 0

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        if (
            not self._mcp_access_log
            and self.cycle is not None
            and self.cycle.scope is self.scope
            and self.scope["path"].startswith("/mcp/")
        ):
            self.cycle.access_log = False

    def on_body(self, body: bytes) -> None:
        super().on_body(body)
        if self._held is not None:
            self.flow.resume_reading()  # nobody reads it yet: buffered whole, as Daphne did

    def on_message_complete(self) -> None:
        self._stop_clock()
        super().on_message_complete()
        if self._held is not None:
            cycle, app = self._held
            self._held = None
            super()._start_asgi_task(cycle, app)

    def _start_asgi_task(self, cycle, app) -> None:
        """The application gets a request once it has arrived whole (what the clock bounds), so
        it never answers one whose body may still time out: a request arriving in one read (nearly
        all) starts at once, as in uvicorn."""
        if self._arriving and cycle.scope is self.scope:
            self._held = (cycle, app)
            if cycle.waiting_for_100_continue:  # the client waits for this before the body
                self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                cycle.waiting_for_100_continue = False
            return
        super()._start_asgi_task(cycle, app)

    def handle_websocket_upgrade(self) -> None:
        self._stop_clock()  # the socket's protocol takes the transport over
        super().handle_websocket_upgrade()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_clock()
        self._held = None
        super().connection_lost(exc)

    # -- the clock ---------------------------------------------------------------------------

    def _stop_clock(self) -> None:
        self._arriving = False
        if self._timers is not None:
            for timer in self._timers:
                timer.cancel()
            self._timers = None
        if self._slow_address is not None:
            _slow[self._slow_address] -= 1
            if _slow[self._slow_address] <= 0:
                del _slow[self._slow_address]
            self._slow_address = None

    def _turned_slow(self) -> None:
        address = self._address()
        if self._per_client and _slow[address] >= self._per_client:
            self._stop_clock()
            self._refuse_slow(address)
            return
        _slow[address] += 1
        self._slow_address = address

    def _timed_out(self) -> None:
        self._stop_clock()
        logger.warning(
            "request from %s not received whole within %s s: 408", self._peer(), self._read_timeout
        )
        self._reply_and_close(
            408,
            "Request Timeout",
            "request_timeout",
            f"The request did not arrive within {self._read_timeout:g} s",
        )

    def _refuse_slow(self, address: str) -> None:
        logger.warning("%s has %d requests still arriving: 429", address, _slow[address])
        self._reply_and_close(
            429,
            "Too Many Requests",
            "too_many_slow_requests",
            "Too many requests from this address are still arriving",
            b"retry-after: 10\r\n",
        )

    def _reply_and_close(
        self, status: int, reason: str, error: str, message: str, extra: bytes = b""
    ) -> None:
        cycle = self.cycle
        if cycle is not None and cycle.scope is self.scope and cycle.response_started:
            # The application already answered (or is answering) this request: no second reply.
            self.transport.close()
            return
        body = json.dumps({"error": error, "message": message}).encode()
        self.transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n%s\r\n%s"
            % (status, reason.encode(), len(body), extra, body)
        )
        # A lingering close (RFC 9112 §9.6): end our side after the reply, and read on (discarding)
        # until the client closes or `_LINGER` seconds. Closing at once while the client still
        # sends (a dripping one does) resets the connection, and a reset makes the client's
        # kernel drop the reply it has not read yet: it would see a reset, never the 408 / 429.
        self._lingering = True  # the application sees a disconnect once the transport closes
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self.loop.call_later(_LINGER, self.transport.close)
        else:
            self.transport.close()  # after what is buffered is written

    def _peer(self) -> str:
        return self.client[0] if self.client else "?"

    def _address(self) -> str:
        """The client address (apps/core/client_address.py), from the headers arrived so far."""
        forwarded = [
            value.decode("latin-1")
            for name, value in (self.headers or ())
            if name == b"x-forwarded-for"
        ]
        return client_address(self._peer(), forwarded)
