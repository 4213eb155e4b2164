"""Dynamic Client Registration (RFC 7591) as hosted MCP clients use it: open, but checked.

django-oauth-toolkit registers the client; before it does, the hub refuses redirect URIs that are
neither https nor http on a loopback address (OAuth 2.1 §2.3.1, RFC 8252 §7.3) or that carry
credentials, grant types other than the authorization code (with refresh), and more than
MCPHUB_OAUTH_REGISTRATIONS_PER_HOUR registrations an hour from one address. An update of a
registration (RFC 7592) passes the same checks.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from oauth2_provider.views import (
    DynamicClientRegistrationManagementView,
    DynamicClientRegistrationView,
)

from apps.core.client_address import request_client_address
from apps.oauth.redirects import redirect_uri_problem

ALLOWED_GRANT_TYPES = {"authorization_code", "refresh_token"}
RATE_WINDOW_SECONDS = 3600


def _error(code: str, description: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": code, "error_description": description}, status=status)


def metadata_problem(data: Any) -> tuple[str, str] | None:
    """The RFC 7591 error for a registration request the hub will not accept, or None."""
    if not isinstance(data, dict):
        return "invalid_client_metadata", "The request body must be a JSON object."
    uris = data.get("redirect_uris")
    if not isinstance(uris, list) or not uris:
        return "invalid_redirect_uri", "redirect_uris must be a non-empty array."
    for uri in uris:
        problem = redirect_uri_problem(uri)
        if problem:
            return "invalid_redirect_uri", problem
    grant_types = data.get("grant_types", ["authorization_code"])
    if (
        not isinstance(grant_types, list)
        or not set(grant_types) <= ALLOWED_GRANT_TYPES
        or "authorization_code" not in grant_types
    ):
        return (
            "invalid_client_metadata",
            "grant_types may hold only authorization_code and refresh_token.",
        )
    response_types = data.get("response_types", ["code"])
    if response_types != ["code"]:
        return "invalid_client_metadata", 'response_types must be ["code"].'
    name = data.get("client_name", "")
    if not isinstance(name, str) or len(name) > 100:
        return "invalid_client_metadata", "client_name must be a string of at most 100 characters."
    return None


def _over_rate(request: HttpRequest) -> bool:
    key = f"oauth:dcr:{request_client_address(request)}"
    cache.add(key, 0, RATE_WINDOW_SECONDS)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, RATE_WINDOW_SECONDS)
        count = 1
    return count > settings.MCPHUB_OAUTH_REGISTRATIONS_PER_HOUR


def refusal(request: HttpRequest) -> JsonResponse | None:
    """The error for a registration or update body the hub will not accept, or None."""
    try:
        data = json.loads(request.body or b"null")
    except ValueError:
        return _error("invalid_client_metadata", "The request body must be valid JSON.")
    problem = metadata_problem(data)
    return _error(*problem) if problem else None


class RegistrationView(DynamicClientRegistrationView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        refused = refusal(request)
        if refused:
            return refused
        if _over_rate(request):
            response = _error(
                "temporarily_unavailable",
                "Too many client registrations from this address; try later.",
                429,
            )
            response["Retry-After"] = str(RATE_WINDOW_SECONDS)
            return response
        response = super().post(request, *args, **kwargs)
        response["Cache-Control"] = "no-store"
        return response


class RegistrationManagementView(DynamicClientRegistrationManagementView):
    """`/oauth/register/<client_id>/` (RFC 7592): the toolkit's, with the hub's checks on an update."""

    def put(self, request: HttpRequest, client_id: str, *args: Any, **kwargs: Any) -> HttpResponse:
        return refusal(request) or super().put(request, client_id, *args, **kwargs)
