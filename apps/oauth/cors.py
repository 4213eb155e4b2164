"""Cross-origin access to the authorization server's public documents and endpoints.

Browser-based MCP clients (the Inspector's web UI, web apps) discover, register and exchange codes
from another origin. These endpoints take no cookies (PKCE public clients, or client credentials in
the request), so any origin may call them; the consent page is not among them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

ALLOWED_HEADERS = "Authorization, Content-Type, MCP-Protocol-Version"


def public_cors(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.method == "OPTIONS" and "HTTP_ACCESS_CONTROL_REQUEST_METHOD" in request.META:
            response = HttpResponse(status=204)
            response["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
            response["Access-Control-Allow-Headers"] = ALLOWED_HEADERS
            response["Access-Control-Max-Age"] = "86400"
        else:
            response = view(request, *args, **kwargs)
        response["Access-Control-Allow-Origin"] = "*"
        return response

    return csrf_exempt(wrapped)
