"""Hardening of the Daphne (Twisted) server the hub runs under, installed from mcphub/asgi.py.

- The access log never carries a raw token: `/mcp/t/<token>/` paths are redacted before writing.
- A request must arrive whole (request line, headers and body) within
  `MCPHUB_REQUEST_READ_TIMEOUT` seconds of its first byte, else 408 and the connection closes:
  Twisted's own idle timeout restarts with every byte, so a client dripping bytes, or declaring a
  Content-Length larger than what it sends, would otherwise hold the connection for hours.
- One client address may have at most `MCPHUB_MAX_SLOW_REQUESTS_PER_CLIENT` requests still
  arriving at once; more get 429 at once. A request sent in one go never counts: Twisted reads it
  whole within one `dataReceived`.

Both apply before Daphne hands the request to the application, so they cover every path (pages,
API, MCP endpoints) in the embedded and the production shape alike.
"""

from __future__ import annotations

import functools
import json
import logging
from collections import Counter

from django.conf import settings

from apps.accounts.tokens import redact

logger = logging.getLogger("mcphub.server")

_reading: Counter[str] = Counter()  # client address -> requests still arriving


def _redact_access_log() -> None:
    try:
        from daphne.access import AccessLogGenerator
    except ImportError:  # another ASGI server: its own access log is its own business
        return
    if getattr(AccessLogGenerator.write_entry, "redacts_tokens", False):
        return
    original = AccessLogGenerator.write_entry

    def write_entry(self, host, date, request, *args, **kwargs):
        return original(self, host, date, redact(request), *args, **kwargs)

    write_entry.redacts_tokens = True
    AccessLogGenerator.write_entry = write_entry


def _reply_and_close(channel, status: int, reason: str, error: str, message: str, extra: bytes = b"") -> None:
    body = json.dumps({"error": error, "message": message}).encode()
    channel.transport.write(
        b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n%s\r\n%s"
        % (status, reason.encode(), len(body), extra, body)
    )
    channel.loseConnection()


def _peer(channel) -> str:
    return str(getattr(channel.transport.getPeer(), "host", "?"))


def _stop_clock(channel) -> None:
    call = getattr(channel, "_mcphub_read_deadline", None)
    if call is None:
        return
    channel._mcphub_read_deadline = None
    if call.active():
        call.cancel()
    peer = channel._mcphub_peer
    _reading[peer] -= 1
    if _reading[peer] <= 0:
        del _reading[peer]


def _timed_out(channel, seconds: float) -> None:
    channel._mcphub_read_deadline = None
    peer = channel._mcphub_peer
    _reading[peer] -= 1
    if _reading[peer] <= 0:
        del _reading[peer]
    logger.warning("request from %s not received whole within %s s: 408", peer, seconds)
    _reply_and_close(channel, 408, "Request Timeout", "request_timeout", f"The request did not arrive within {seconds:g} s")


def _guard_slow_requests() -> None:
    from twisted.web.http import HTTPChannel

    if getattr(HTTPChannel, "_mcphub_guarded", False):
        return
    seconds = float(settings.MCPHUB_REQUEST_READ_TIMEOUT)
    per_client = settings.MCPHUB_MAX_SLOW_REQUESTS_PER_CLIENT
    original_data, original_complete, original_lost = (
        HTTPChannel.dataReceived, HTTPChannel.allContentReceived, HTTPChannel.connectionLost,
    )

    def dataReceived(self, data: bytes) -> None:
        if seconds > 0 and data and not self._handlingRequest and getattr(self, "_mcphub_read_deadline", None) is None:
            peer = _peer(self)
            if per_client and _reading[peer] >= per_client:
                logger.warning("%s has %d requests still arriving: 429", peer, _reading[peer])
                _reply_and_close(self, 429, "Too Many Requests", "too_many_slow_requests",
                                 "Too many requests from this address are still arriving", b"retry-after: 10\r\n")
                return
            _reading[peer] += 1
            self._mcphub_peer = peer
            self._mcphub_read_deadline = self.callLater(seconds, functools.partial(_timed_out, self, seconds))
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
