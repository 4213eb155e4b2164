"""Who is calling, and which endpoint they may reach, with short in-process caches.

Token checks hit the database only on a cache miss; a revoked token stops working within
`CACHE_SECONDS`. Wrong or missing token → 401; a valid token for someone else's endpoint → 404,
exactly as for an endpoint that does not exist, so nothing leaks.
"""

from __future__ import annotations

import functools
import hashlib
import time
from dataclasses import dataclass

from django.conf import settings

from apps.accounts.services import authenticate_token
from apps.core.singleflight import forget, single_flight
from apps.toolsets.models import Endpoint

CACHE_SECONDS = 5.0
_MAX_ENTRIES = 10_000


@dataclass(frozen=True)
class Principal:
    user_id: int
    token_prefix: str
    scope_endpoint_id: int | None
    rate_limit: int
    # False for API-only tokens: they authenticate, but MCP endpoints refuse them (403).
    mcp_allowed: bool = True


@dataclass(frozen=True)
class EndpointRef:
    id: int
    owner_id: int
    slug: str


class _TTLCache:
    def __init__(self) -> None:
        self._entries: dict[str, tuple[float, object]] = {}

    def get(self, key: str) -> object | None:
        entry = self._entries.get(key)
        if entry is None or entry[0] < time.monotonic():
            return None
        return entry[1]

    def put(self, key: str, value: object) -> None:
        if len(self._entries) >= _MAX_ENTRIES:
            self._entries.clear()  # crude but bounded: a flood of distinct keys cannot grow memory
        self._entries[key] = (time.monotonic() + CACHE_SECONDS, value)

    def clear(self) -> None:
        self._entries.clear()


_principals = _TTLCache()
_endpoints = _TTLCache()


def _lookup_principal(raw: str) -> Principal | None:
    token = authenticate_token(raw)
    if token is None:
        return None
    limit = token.rate_limit_per_minute if token.rate_limit_per_minute is not None else settings.MCPHUB_RATE_LIMIT_PER_MINUTE
    return Principal(token.user_id, token.prefix, token.endpoint_id, limit, token.allows_mcp)


def _lookup_endpoint(*, slug: str | None = None, endpoint_id: int | None = None) -> EndpointRef | None:
    query = Endpoint.objects.filter(slug=slug) if slug is not None else Endpoint.objects.filter(pk=endpoint_id)
    row = query.values_list("pk", "owner_id", "slug").first()
    return EndpointRef(*row) if row else None


async def principal_for(raw: str) -> Principal | None:
    key = hashlib.sha256(raw.encode()).hexdigest()
    cached = _principals.get(key)
    if cached is None:
        cached = await single_flight("auth:principal", key, functools.partial(_lookup_principal, raw))
        if cached is not None:
            _principals.put(key, cached)
    return cached  # type: ignore[return-value]


async def endpoint_for(principal: Principal, slug: str | None) -> EndpointRef | None:
    """The endpoint `principal` may use: by slug (header auth) or the token's own (URL auth)."""
    key = f"slug:{slug}" if slug is not None else f"id:{principal.scope_endpoint_id}"
    ref = _endpoints.get(key)
    if ref is None:
        ref = await single_flight(
            "auth:endpoint", key, functools.partial(_lookup_endpoint, slug=slug, endpoint_id=principal.scope_endpoint_id)
        )
        if ref is not None:
            _endpoints.put(key, ref)
    if ref is None or ref.owner_id != principal.user_id:  # type: ignore[union-attr]
        return None
    if principal.scope_endpoint_id is not None and principal.scope_endpoint_id != ref.id:  # type: ignore[union-attr]
        return None
    return ref  # type: ignore[return-value]


def clear_caches() -> None:
    _principals.clear()
    _endpoints.clear()
    forget("auth:principal")
    forget("auth:endpoint")
