"""The protected resources are the MCP endpoints: their URLs, and the metadata documents about them.

An endpoint's resource identifier (RFC 8707, RFC 9728) is its URL exactly as clients use it,
`<origin>/mcp/<slug>/`; its metadata lives at the RFC 9728 path-suffixed well-known URL.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

RESOURCE_PATH = re.compile(r"^/mcp/(?P<slug>[a-z0-9][a-z0-9-]{2,63})/?$")
METADATA_PREFIX = "/.well-known/oauth-protected-resource"
SCOPE = "mcp"


def resource_url(origin_url: str, slug: str) -> str:
    return f"{origin_url}/mcp/{slug}/"


def metadata_url(origin_url: str, slug: str) -> str:
    return f"{origin_url}{METADATA_PREFIX}/mcp/{slug}/"


def slug_of(resource: str, *, origin_url: str | None = None) -> str | None:
    """The endpoint slug a resource URL names (from `origin_url`, when given), or None."""
    try:
        parts = urlsplit(resource)
    except ValueError:
        return None
    if parts.query or parts.fragment or parts.username or parts.password:
        return None
    if origin_url is not None and f"{parts.scheme}://{parts.netloc}".lower() != origin_url.lower():
        return None
    match = RESOURCE_PATH.match(parts.path)
    return match["slug"] if match else None


def audience_slug(resources: list[str]) -> str | None:
    """The one endpoint a token's audience names; None for none, several, or a foreign URL."""
    slugs = {slug_of(resource) for resource in resources}
    return slugs.pop() if len(slugs) == 1 and None not in slugs else None
