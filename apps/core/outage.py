"""Redis is unreachable: answer 503 with Retry-After (never a 500), and say so in the log once.

A Redis restart makes every request that touches shared state fail for a second or two; a
traceback per request would bury the log (thousands of lines), so one warning per interval.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from apps.core.hotstate import OUTAGE_ERRORS

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 1
MESSAGE = "The hub is briefly unavailable (its Redis cannot be reached); retry shortly"
BODY = {"error": "unavailable", "message": MESSAGE}
HEADERS = [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())]
_LOG_EVERY = 5.0
_logged_at = 0.0
_unlogged = 0


def note(exc: BaseException) -> None:
    """Log an outage error: the first at once, then a count every few seconds."""
    global _logged_at, _unlogged
    now = time.monotonic()
    if now - _logged_at < _LOG_EVERY:
        _unlogged += 1
        return
    suffix = f" ({_unlogged} more since the last report)" if _unlogged else ""
    logger.warning("Redis unreachable, answering 503: %s: %s%s", type(exc).__name__, exc, suffix)
    _logged_at, _unlogged = now, 0


class OutageMiddleware:
    """Pages and the API: a Redis outage is a 503 with Retry-After, not Django's 500."""

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> Any:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OUTAGE_ERRORS):
            return None
        note(exception)
        response = JsonResponse(BODY, status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
