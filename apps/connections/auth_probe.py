"""Does an HTTP backend ask for OAuth? One unauthenticated `initialize`, read for a 401 challenge.

Library level (no models): the catalog asks after a failed discovery, the upstream OAuth flow
before discovering the backend's authorization server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import httpx2
from mcp.client.auth.utils import (
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
)

from apps.connections.transports.guard import sync_client_kwargs

_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "mcphub-probe", "version": "1"},
    },
}
_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def answer_to_initialize(
    url: str,
    headers: Mapping[str, str] | None = None,
    *,
    timeout: float = 10.0,
    public_only: bool = False,
) -> httpx2.Response | None:
    """The backend's answer to an `initialize` carrying `headers` (None: it could not be reached)."""
    guarded = sync_client_kwargs(public_only)
    try:
        with httpx2.Client(
            timeout=timeout, headers=dict(headers or {}), follow_redirects=False, **guarded
        ) as http:  # type: ignore[arg-type]
            return http.post(url, json=_INITIALIZE, headers=_HEADERS)
    except httpx2.HTTPError:
        return None


@dataclass(frozen=True)
class Challenge:
    """What a backend's 401 said: where its resource metadata is (RFC 9728), and the scope it wants."""

    resource_metadata_url: str | None
    scope: str | None


def probe(
    url: str,
    headers: Mapping[str, str] | None = None,
    *,
    timeout: float = 10.0,
    public_only: bool = False,
) -> Challenge | None:
    """The backend's Bearer challenge, or None if it does not answer 401 with one. `public_only`:
    as the backend's spec says (its URL was chosen by a user who is not staff)."""
    response = answer_to_initialize(url, headers, timeout=timeout, public_only=public_only)
    if (
        response is None
        or response.status_code != 401
        or not response.headers.get("WWW-Authenticate", "").lower().startswith("bearer")
    ):
        return None
    return Challenge(
        extract_resource_metadata_from_www_auth(response), extract_scope_from_www_auth(response)
    )
