"""Who is on a chat WebSocket: a hub access token (`Authorization: Bearer`) or the browser session.

A session-authenticated socket must come from this site (its `Origin` matches `Host`): a browser
sends the session cookie to any page's WebSocket, so the check stops cross-site hijacking.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth.models import AnonymousUser

from apps.accounts.services import authenticate_token


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def socket_user(scope: dict[str, Any]):
    """The socket's user, else AnonymousUser. Synchronous: a token is looked up in the database,
    so call it on a database thread (the sockets do, with the lookup of what they open)."""
    authorization = _header(scope, b"authorization")
    if authorization is not None:
        scheme, _, raw = authorization.partition(" ")
        if scheme.lower() != "bearer" or not raw.strip():
            return AnonymousUser()
        token = authenticate_token(raw.strip())
        return token.user if token is not None else AnonymousUser()
    user = scope.get("user") or AnonymousUser()
    if not _same_origin(scope):
        return AnonymousUser()
    return user


def _same_origin(scope: dict[str, Any]) -> bool:
    origin, host = _header(scope, b"origin"), _header(scope, b"host")
    return origin is not None and host is not None and urlsplit(origin).netloc == host
