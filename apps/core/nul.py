"""A NUL character in a request's query string is bad input: answer 400 before any view runs.

Postgres cannot store or compare text with NUL (psycopg raises DataError: a 500), and nothing in
the hub's URLs can legitimately carry one; forms and serializers already refuse it in bodies
(Django's ProhibitNullCharactersValidator), but views read query parameters such as `?endpoint=`
or `?q=` straight into lookups, so the one check sits here.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

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
