"""Client ID Metadata Documents: django-oauth-toolkit resolves and validates them; the hub fetches
them through the one outbound address policy (apps/core/outbound.py) — https, public addresses (or
what staff allow), the checked address connected to, no redirects, size and time limits — and adds
plain http on loopback only when MCPHUB_OAUTH_CIMD_ALLOW_LOOPBACK_HTTP is on (development clients
and tests)."""

from __future__ import annotations

import logging
import time
from urllib.parse import urlsplit

import httpx2
from django.conf import settings
from oauth2_provider import cimd as dot_cimd
from oauth2_provider.settings import oauth2_settings

from apps.core.outbound import PUBLIC_ONLY, guarded_client, trusting
from apps.oauth.redirects import is_loopback, redirect_uri_problem

logger = logging.getLogger(__name__)


def loopback_http_allowed(client_id: str) -> bool:
    if not settings.MCPHUB_OAUTH_CIMD_ALLOW_LOOPBACK_HTTP or not client_id.startswith("http://"):
        return False
    parts = urlsplit(client_id)
    return (
        is_loopback(parts.hostname)
        and parts.path not in ("", "/")
        and not parts.username
        and not parts.fragment
    )


def resolve_loopback(client_id: str):
    """Fetch, validate and store a loopback client's document the way CIMD does for https ones."""
    try:
        return dot_cimd._fetch_validate_upsert(client_id)
    except dot_cimd.CIMDError as exc:
        logger.info("CIMD resolution failed for %r: %s", client_id, exc)
        return None


class _Fetched:
    """What the toolkit's document checks read of a response: status, headers, the body's first bytes."""

    def __init__(self, response: httpx2.Response, body: bytes) -> None:
        self.status = response.status_code
        self.headers = response.headers
        self._body = body

    def read(self, amount: int) -> bytes:
        return self._body[:amount]


class HubMetadataFetcher(dot_cimd.SafeMetadataFetcher):
    """The toolkit's fetcher, its network part replaced by the hub's outbound policy."""

    def fetch(self, client_id: str):
        if loopback_http_allowed(client_id):
            policy = trusting(client_id)  # the loopback host the setting allows, and nothing else
        else:
            dot_cimd._validate_client_id_url(client_id)
            policy = PUBLIC_ONLY
        timeout = oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS
        deadline = time.monotonic() + timeout  # the whole fetch, a slowly dripping body included
        limit = oauth2_settings.CIMD_MAX_DOCUMENT_SIZE + 1
        headers = {"Accept": "application/json, application/*+json"}
        try:
            with guarded_client(policy, timeout=timeout, follow_redirects=False) as http:
                with http.stream("GET", client_id, headers=headers) as response:
                    body = b""
                    for chunk in response.iter_bytes():
                        body += chunk
                        if len(body) >= limit or time.monotonic() > deadline:
                            break
        except httpx2.HTTPError as exc:
            raise dot_cimd.CIMDError(f"could not fetch client_id document: {exc}") from exc
        if time.monotonic() > deadline:
            raise dot_cimd.CIMDError("client_id document took too long to arrive")
        return self._read_document(_Fetched(response, body))

    def _read_document(self, response):
        metadata, max_age = super()._read_document(response)
        for uri in metadata.get("redirect_uris") or []:
            problem = redirect_uri_problem(uri)
            if problem:
                raise dot_cimd.CIMDError(problem)
        return metadata, max_age
