"""Who is on a chat or run WebSocket, and what they may do there: a hub access token
(`Authorization: Bearer`) or the browser session.

Tokens follow the REST API's scope rule (AccessToken.api_refusal): following a conversation or a
run reads, so it needs `api_read`; sending what changes something (a message, a stop, an approval)
writes, so it needs `api_write` (or `full`). A token that may not even read — an MCP token, one
scoped to an endpoint — is no socket credential at all, nor is an OAuth access token (issued to
an MCP client for one endpoint). The browser session may do everything its user may.

A session-authenticated socket must come from this site (its `Origin` matches `Host`): a browser
sends the session cookie to any page's WebSocket, so the check stops cross-site hijacking.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth.models import AnonymousUser

from apps.accounts.models import AccessToken
from apps.accounts.services import authenticate_token


@dataclass(frozen=True)
class SocketAccess:
    """The socket's user (AnonymousUser: refused) and the token it came with (None: the session)."""

    user: Any
    token: AccessToken | None = None

    def refusal(self, *, write: bool) -> str | None:
        """Why this socket may not do that, or None when it may."""
        return None if self.token is None else self.token.api_refusal(write=write)


NOBODY = SocketAccess(AnonymousUser())


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def socket_access(scope: dict[str, Any]) -> SocketAccess:
    """Who is on the socket and with what token; NOBODY when they may not even follow. Synchronous:
    a token may be looked up in the database, so call it on a database thread (the sockets do,
    with the lookup of what they open)."""
    authorization = _header(scope, b"authorization")
    if authorization is not None:
        scheme, _, raw = authorization.partition(" ")
        if scheme.lower() != "bearer" or not raw.strip():
            return NOBODY
        token = authenticate_token(raw.strip())
        if token is None or token.api_refusal(write=False) is not None:
            return NOBODY
        return SocketAccess(token.user, token)
    if not _same_origin(scope):
        return NOBODY
    return SocketAccess(scope.get("user") or AnonymousUser())


def _same_origin(scope: dict[str, Any]) -> bool:
    origin, host = _header(scope, b"origin"), _header(scope, b"host")
    return origin is not None and host is not None and urlsplit(origin).netloc == host
