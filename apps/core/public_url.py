"""The hub's public origin (`scheme://host[:port]`) as its clients reach it: the one place every URL
the hub shows (endpoint URLs, client snippets, "enable it at …" and "fill your credentials at …"
hints) takes its base from.

`SITE_URL` wins when set (a deployment that names itself). Otherwise the origin is the request's
own: the Host it was sent to and its scheme — so `PORT=18431 ./hub run` shows 18431 everywhere,
and a hub reached as `hub.lan:8000` says so. Behind trusted proxies (`MCPHUB_TRUSTED_PROXIES`),
Django's `USE_X_FORWARDED_HOST` and, with `MCPHUB_HTTPS`, `SECURE_PROXY_SSL_HEADER` make the
request report the forwarded host and scheme. The Host was already checked against `ALLOWED_HOSTS` (Django's `get_host()`, the
gateway's `_check_origin`), so echoing it is safe.

The origin of the request being served is kept in a ContextVar set by `PublicUrlMiddleware` (pages,
REST API) and the gateway (MCP endpoints), so code far from the request (the credentials hints,
the exposure view) reads it without a request argument. Where no request is being served (a chat
turn or run in a worker) the path alone is returned: those texts are shown on the hub's own pages,
where a path is a working link.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.http.request import split_domain_port, validate_host

_current: ContextVar[str] = ContextVar("mcphub_public_origin", default="")


def origin() -> str:
    """`SITE_URL`, else the origin of the request being served, else "" (paths stay relative)."""
    return settings.SITE_URL or _current.get()


def absolute(path: str) -> str:
    """`path` (starting with "/") as a URL a client can follow."""
    return f"{origin()}{path}"


def request_origin(request: HttpRequest) -> str:
    """The origin a Django request was sent to (forwarded host and scheme where Django trusts them)."""
    return f"{request.scheme}://{request.get_host()}"


def scope_origin(scope: dict, headers: dict[str, str]) -> str:
    """The origin an ASGI request was sent to, its Host already checked; `headers` lower-cased."""
    scheme = scope.get("scheme", "http")
    if settings.MCPHUB_HTTPS:
        forwarded = headers.get("x-forwarded-proto")
        scheme = forwarded if forwarded in ("http", "https") else scheme
    host = headers.get("host", "")
    forwarded = headers.get("x-forwarded-host", "").split(",")[0].strip()
    if (
        settings.USE_X_FORWARDED_HOST
        and forwarded
        and validate_host(split_domain_port(forwarded)[0], settings.ALLOWED_HOSTS)
    ):
        host = forwarded
    return f"{scheme}://{host}"


def serving(origin_url: str) -> None:
    """Mark `origin_url` as the origin of the request this task serves (the gateway: one task per
    request, so the value ends with it)."""
    _current.set(origin_url)


class PublicUrlMiddleware:
    """Sets the public origin for the duration of a page or REST request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = _current.set(request_origin(request))  # after CommonMiddleware: the Host is allowed
        try:
            return self.get_response(request)
        finally:
            _current.reset(token)
