"""Who is calling, and which endpoint they may reach, with short in-process caches.

Token checks hit the database only on a cache miss; a revoked hub token stops working within
`CACHE_SECONDS`, a revoked OAuth token at once (apps/oauth/revocation.py). Wrong or missing token
→ 401; a valid hub token for someone else's endpoint → 404, exactly as for an endpoint that does not
exist, so nothing leaks. An OAuth token names its one endpoint (its audience): anywhere else → 401.
"""

from __future__ import annotations

import functools
import hashlib
import time
from dataclasses import dataclass

from django.conf import settings

from apps.accounts import tokens
from apps.accounts.services import authenticate_token
from apps.core.singleflight import forget, single_flight
from apps.oauth import revocation
from apps.oauth.selectors import access_grant
from apps.oauth.tokens import looks_like_access_token
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
    # OAuth access tokens only: the endpoint they were issued for, when they expire (unix time),
    # and the revocation epoch read before they were validated.
    audience_slug: str | None = None
    expires_at: float | None = None
    epoch: int | None = None

    @property
    def is_oauth(self) -> bool:
        return self.audience_slug is not None


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


def _lookup_principal(raw: str, epoch: int | None) -> Principal | None:
    if epoch is not None:
        return _lookup_oauth_principal(raw, epoch)
    token = authenticate_token(raw)
    if token is None:
        return None
    limit = (
        token.rate_limit_per_minute
        if token.rate_limit_per_minute is not None
        else settings.MCPHUB_RATE_LIMIT_PER_MINUTE
    )
    return Principal(token.user_id, token.prefix, token.endpoint_id, limit, token.allows_mcp)


def _lookup_oauth_principal(raw: str, epoch: int) -> Principal | None:
    grant = access_grant(raw)
    if grant is None:
        return None
    return Principal(
        grant.user_id,
        f"oauth:{grant.application_id}:{grant.user_id}",
        grant.endpoint_id,
        settings.MCPHUB_RATE_LIMIT_PER_MINUTE,
        True,
        grant.endpoint_slug,
        grant.expires_at,
        epoch,
    )


def _lookup_endpoint(
    *, slug: str | None = None, endpoint_id: int | None = None
) -> EndpointRef | None:
    query = (
        Endpoint.objects.filter(slug=slug)
        if slug is not None
        else Endpoint.objects.filter(pk=endpoint_id)
    )
    row = query.values_list("pk", "owner_id", "slug").first()
    return EndpointRef(*row) if row else None


async def principal_for(raw: str) -> Principal | None:
    oauth = looks_like_access_token(raw)
    if not oauth and tokens.parse_prefix(raw) is None:
        return None  # neither kind of token: refused without a lookup
    key = hashlib.sha256(raw.encode()).hexdigest()
    # An OAuth token is checked against the revocation epoch on every request (one Redis GET).
    epoch = await revocation.current_epoch() if oauth else None
    cached: Principal | None = _principals.get(key)  # type: ignore[assignment]
    if cached is not None and cached.epoch != epoch:
        cached = None  # something was revoked since it was cached: validate again
    if cached is None:
        cached = await single_flight(
            "auth:principal", f"{key}:{epoch}", functools.partial(_lookup_principal, raw, epoch)
        )
        if cached is not None:
            _principals.put(key, cached)
    if cached is not None and cached.expires_at is not None and cached.expires_at <= time.time():
        return None
    return cached


async def endpoint_for(principal: Principal, slug: str | None) -> EndpointRef | None:
    """The endpoint `principal` may use: by slug (header auth) or the token's own (URL auth)."""
    key = f"slug:{slug}" if slug is not None else f"id:{principal.scope_endpoint_id}"
    ref = _endpoints.get(key)
    if ref is None:
        ref = await single_flight(
            "auth:endpoint",
            key,
            functools.partial(_lookup_endpoint, slug=slug, endpoint_id=principal.scope_endpoint_id),
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
