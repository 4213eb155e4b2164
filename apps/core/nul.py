"""A NUL character in a request's query string, or in a name an API body looks a row up by, is
bad input: it is refused with a clear 400.

Postgres cannot store or compare text with NUL (psycopg raises DataError: a 500). Forms and
serializers' text fields already refuse it in bodies (Django's ProhibitNullCharactersValidator),
but views read query parameters such as `?endpoint=` or `?q=` straight into lookups (the
middleware below), and DRF's SlugRelatedField looks its value up unchecked (`SlugRelatedField`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from rest_framework import serializers

MESSAGE = "The query string contains a NUL character (%00), which no parameter accepts."


class RejectNulMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if any(
            "\x00" in key or any("\x00" in v for v in values) for key, values in request.GET.lists()
        ):
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": MESSAGE}, status=400)
            return HttpResponseBadRequest(MESSAGE, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


class SlugRelatedField(serializers.SlugRelatedField):
    """DRF's, refusing a NUL in the name it looks up, as a text field would (the fuzz test found
    `POST /api/conversations/` with such an `endpoint` answering 500 on Postgres)."""

    default_error_messages = {"null_characters": "Null characters are not allowed."}

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str) and "\x00" in data:
            self.fail("null_characters")
        return super().to_internal_value(data)
