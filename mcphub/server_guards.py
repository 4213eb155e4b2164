"""Hardening of the Daphne (Twisted) server the hub runs under, installed from mcphub/asgi.py.

- The access log never carries a raw token: `/mcp/t/<token>/` paths are redacted before writing.
  Requests to MCP endpoints (`/mcp/...`) get no line at all unless `MCPHUB_MCP_ACCESS_LOG` is
  set: each tool call is in the call log already, and formatting, writing and flushing the line
  cost ~1 % of the web process's CPU per call (py-spy, production web under load).
- A request must arrive whole (request line, headers and body) within
  `MCPHUB_REQUEST_READ_TIMEOUT` seconds of its first byte, else 408 and the connection closes:
  Twisted's own idle timeout restarts with every byte, so a client dripping bytes, or declaring a
  Content-Length larger than what it sends, would otherwise hold the connection for hours.
- A request still arriving after half that time is slow. One client address may hold at most
  `MCPHUB_MAX_SLOW_REQUESTS_PER_CLIENT` slow requests: the next one to turn slow is answered 429
  and closed, and while the address holds that many, its new requests are answered 429 at once.
  Requests being served, slow tool calls and open streams never count, nor do requests merely
  in progress: a single-threaded client starting many requests at once writes all their headers
  before any body, so dozens of ordinary requests from one address are half-arrived together.

Both apply before Daphne hands the request to the application, so they cover every path (pages,
API, MCP endpoints) in the embedded and the production shape alike.
"""

from __future__ import annotations

import json
import logging
from collections import Counter

from django.conf import settings

from apps.accounts.tokens import redact
from apps.core.client_address import client_address

logger = logging.getLogger("mcphub.server")

_slow: Counter[str] = Counter()  # client address -> requests still arriving past the bound


def _redact_access_log() -> None:
    try:
        from daphne.access import AccessLogGenerator
    except ImportError:  # another ASGI server: its own access log is its own business
        return
    if getattr(AccessLogGenerator.write_entry, "redacts_tokens", False):
        return
    original = AccessLogGenerator.write_entry
    original_call = AccessLogGenerator.__call__

    def write_entry(self, host, date, request, *args, **kwargs):
        return original(self, host, date, redact(request), *args, **kwargs)

    def log_action(self, protocol, action, details):
        if (
            protocol == "http"
            and not settings.MCPHUB_MCP_ACCESS_LOG
            and details.get("path", "").startswith("/mcp/")
        ):
            return
        return original_call(self, protocol, action, details)

    write_entry.redacts_tokens = True
    AccessLogGenerator.write_entry = write_entry
    AccessLogGenerator.__call__ = log_action


def _reply_and_close(
    channel, status: int, reason: str, error: str, message: str, extra: bytes = b""
) -> None:
    body = json.dumps({"error": error, "message": message}).encode()
    channel.transport.write(
        b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n%s\r\n%s"
        % (status, reason.encode(), len(body), extra, body)
    )
    channel.loseConnection()


def _peer(channel) -> str:
    return str(getattr(channel.transport.getPeer(), "host", "?"))


def _address(channel) -> str:
    """The client address (apps/core/client_address.py), from the headers that have arrived so far."""
    request = channel.requests[-1] if channel.requests else None
    forwarded = (
        request.requestHeaders.getRawHeaders(b"x-forwarded-for", []) if request is not None else []
    )
    return client_address(_peer(channel), [value.decode("latin-1") for value in forwarded])


def _refuse_slow(channel, address: str) -> None:
    logger.warning("%s has %d requests still arriving: 429", address, _slow[address])
    _reply_and_close(
        channel,
        429,
        "Too Many Requests",
        "too_many_slow_requests",
        "Too many requests from this address are still arriving",
        b"retry-after: 10\r\n",
    )


class _Arrival:
    """The clock of one request on `channel` from its first byte until it has arrived whole."""

    def __init__(self, channel, seconds: float, per_client: int) -> None:
        self.channel, self.seconds, self.per_client = channel, seconds, per_client
        self.slow_address: str | None = None  # set while it counts against its address
        self.calls = [
            channel.callLater(seconds / 2, self._turned_slow),
            channel.callLater(seconds, self._timed_out),
        ]

    def stop(self) -> None:
        self.channel._mcphub_arrival = None
        for call in self.calls:
            if call.active():
                call.cancel()
        if self.slow_address is not None:
            _slow[self.slow_address] -= 1
            if _slow[self.slow_address] <= 0:
                del _slow[self.slow_address]
            self.slow_address = None

    def _turned_slow(self) -> None:
        address = _address(self.channel)
        if self.per_client and _slow[address] >= self.per_client:
            self.stop()
            _refuse_slow(self.channel, address)
            return
        _slow[address] += 1
        self.slow_address = address

    def _timed_out(self) -> None:
        self.stop()
        logger.warning(
            "request from %s not received whole within %s s: 408", _peer(self.channel), self.seconds
        )
        _reply_and_close(
            self.channel,
            408,
            "Request Timeout",
            "request_timeout",
            f"The request did not arrive within {self.seconds:g} s",
        )


def _stop_clock(channel) -> None:
    arrival = getattr(channel, "_mcphub_arrival", None)
    if arrival is not None:
        arrival.stop()


def _guard_slow_requests() -> None:
    from twisted.web.http import HTTPChannel

    if getattr(HTTPChannel, "_mcphub_guarded", False):
        return
    seconds = float(settings.MCPHUB_REQUEST_READ_TIMEOUT)
    per_client = settings.MCPHUB_MAX_SLOW_REQUESTS_PER_CLIENT
    original_data, original_complete, original_lost = (
        HTTPChannel.dataReceived,
        HTTPChannel.allContentReceived,
        HTTPChannel.connectionLost,
    )

    def dataReceived(self, data: bytes) -> None:
        if (
            seconds > 0
            and data
            and not self._handlingRequest
            and getattr(self, "_mcphub_arrival", None) is None
        ):
            peer = _peer(self)  # only the socket is known before the headers
            if per_client and _slow[peer] >= per_client:
                _refuse_slow(self, peer)
                return
            self._mcphub_arrival = _Arrival(self, seconds, per_client)
        original_data(self, data)

    def allContentReceived(self) -> None:
        _stop_clock(self)
        original_complete(self)

    def connectionLost(self, reason) -> None:
        _stop_clock(self)
        original_lost(self, reason)

    HTTPChannel.dataReceived = dataReceived
    HTTPChannel.allContentReceived = allContentReceived
    HTTPChannel.connectionLost = connectionLost
    HTTPChannel._mcphub_guarded = True


def install() -> None:
    _redact_access_log()
    try:
        import twisted.web.http  # noqa: F401
    except ImportError:  # not under Twisted: nothing to guard here
        return
    _guard_slow_requests()
