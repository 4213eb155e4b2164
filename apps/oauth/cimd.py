"""Client ID Metadata Documents: django-oauth-toolkit fetches them (https, public addresses, no
redirects, size and time limits); the hub adds only plain http on loopback, and only when
MCPHUB_OAUTH_CIMD_ALLOW_LOOPBACK_HTTP is on (development and tests)."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

import urllib3
from django.conf import settings
from oauth2_provider import cimd as dot_cimd
from oauth2_provider.settings import oauth2_settings

from apps.oauth.redirects import is_loopback, redirect_uri_problem

logger = logging.getLogger(__name__)


def loopback_http_allowed(client_id: str) -> bool:
    if not settings.MCPHUB_OAUTH_CIMD_ALLOW_LOOPBACK_HTTP or not client_id.startswith("http://"):
        return False
    parts = urlsplit(client_id)
    return is_loopback(parts.hostname) and parts.path not in ("", "/") and not parts.username and not parts.fragment


def resolve_loopback(client_id: str):
    """Fetch, validate and store a loopback client's document the way CIMD does for https ones."""
    try:
        return dot_cimd._fetch_validate_upsert(client_id)
    except dot_cimd.CIMDError as exc:
        logger.info("CIMD resolution failed for %r: %s", client_id, exc)
        return None


class HubMetadataFetcher(dot_cimd.SafeMetadataFetcher):
    """The toolkit's SSRF-hardened fetcher; loopback http documents when allowed."""

    def fetch(self, client_id: str):
        if not loopback_http_allowed(client_id):
            return super().fetch(client_id)
        timeout = oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS
        http = urllib3.PoolManager(timeout=urllib3.Timeout(total=timeout), retries=False)
        try:
            response = http.request("GET", client_id, redirect=False, preload_content=False, headers={"Accept": "application/json"})
        except urllib3.exceptions.HTTPError as exc:
            raise dot_cimd.CIMDError(f"could not fetch client_id document: {exc}") from exc
        try:
            return self._read_document(response)
        finally:
            response.release_conn()

    def _read_document(self, response):
        metadata, max_age = super()._read_document(response)
        for uri in metadata.get("redirect_uris") or []:
            problem = redirect_uri_problem(uri)
            if problem:
                raise dot_cimd.CIMDError(problem)
        return metadata, max_age
