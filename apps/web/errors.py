"""Error pages: the hub's layout saying what happened and where to go; JSON under /api/ and /mcp/.

Wired as Django's handler400/403/404/500 in mcphub/urls.py. The MCP gateway answers its own
errors (raw ASGI); only a path Django itself cannot route under /mcp/ reaches these.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ErrorPage:
    status: int
    code: str  # the machine-readable name clients of /api/ and /mcp/ get
    title: str
    explanation: str


PAGES = {
    400: ErrorPage(
        400, "bad_request", "Bad request", "The hub could not make sense of that request."
    ),
    403: ErrorPage(
        403,
        "permission_denied",
        "Not allowed",
        "Your account may not open this page. Ask an admin if you need it.",
    ),
    404: ErrorPage(
        404,
        "not_found",
        "Page not found",
        "There is nothing here. The link may be old, or what it pointed to was deleted or is not yours.",
    ),
    413: ErrorPage(
        413,
        "request_too_large",
        "Too large to read",
        "The hub reads at most {limit} of a form or request body, and this one was larger. "
        "Go back: remove what you do not need, or split it.",
    ),
    500: ErrorPage(
        500,
        "server_error",
        "Something went wrong on the hub",
        "The error is logged for the admins. Try again in a moment; if it keeps happening, tell your admin.",
    ),
}


class WithoutTraceback(logging.Filter):
    """For loggers whose records say everything in one line (a too-large request: Django logs its
    whole traceback, though nothing broke)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = record.exc_text = None
        return True


def _wants_json(request: HttpRequest) -> bool:
    return request.path.startswith(("/api/", "/mcp/")) or request.path in ("/api", "/mcp")


def _respond(request: HttpRequest, status: int, detail: str = "") -> HttpResponse:
    page = PAGES[status]
    if _wants_json(request):
        if request.path.startswith("/mcp"):
            return JsonResponse(
                {"error": page.code, "message": detail or page.title}, status=status
            )
        return JsonResponse({"detail": detail or page.title}, status=status)
    context = {"page": page, "detail": detail, "path": request.path}
    if status == 500:
        # No request context: whatever broke (the database, a context processor) must not break this too.
        return HttpResponse(loader.render_to_string("web/error.html", context), status=status)
    return HttpResponse(
        loader.render_to_string("web/error.html", context, request=request), status=status
    )


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if isinstance(exception, RequestDataTooBig):
        # Raised wherever the body is first read (the CSRF check, before any view): say what it is.
        limit = f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE / 1e6:.1f} MB"
        return _respond(request, 413, PAGES[413].explanation.format(limit=limit))
    return _respond(request, 400)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    # Our PermissionDenied messages are written for the person who hit them ("… is for staff.").
    return _respond(request, 403, str(exception or ""))


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _respond(request, 404)


def server_error(request: HttpRequest) -> HttpResponse:
    return _respond(request, 500)
