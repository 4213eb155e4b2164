"""Calls to a backend with a user's upstream OAuth token: one retry with a refreshed token when
the backend refuses the one the call carried (expired early, or revoked: then "reconnect")."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from mcp import MCPError

from apps.connections.errors import PoolError, ServerCrashed, ServerStartFailed, WorkerLost
from apps.connections.specs import ServerSpec
from apps.core.threads import in_thread
from apps.credentials.errors import CredentialsMissing

T = TypeVar("T")

# How the SDK reports an HTTP error status without a JSON-RPC body (a 401 among them).
_HTTP_ERROR = -32603


async def with_user_token(
    spec: ServerSpec, user_id: int, call: Callable[[ServerSpec], Awaitable[T]]
) -> T:
    """`call(spec)`; if it fails the way a refused bearer token does, check the token and, when it
    was the problem, call once more with the user's refreshed token (never anyone else's)."""
    try:
        return await call(spec)
    except (MCPError, PoolError) as exc:
        if not _maybe_refused(spec, exc):
            raise
        from apps.credentials.upstream.services import renewed_spec

        # A probe and maybe a refresh: network and ORM, off the event loop (not the shared sync thread).
        fresh = await in_thread(renewed_spec)(spec, user_id)
        if fresh is None:
            raise
    return await call(fresh)


def _maybe_refused(spec: ServerSpec, exc: Exception) -> bool:
    if (
        not spec.partition
        or "Authorization" not in spec.headers
        or isinstance(exc, (CredentialsMissing, WorkerLost))  # its worker, not the token
    ):
        return False
    if isinstance(exc, MCPError):
        return exc.code == _HTTP_ERROR
    return isinstance(exc, (ServerStartFailed, ServerCrashed))
