"""Where an authorization response may be sent: https anywhere, plain http only to this machine
(OAuth 2.1 §2.3.1, RFC 8252 §7.3 for native apps). Used for registered and CIMD clients alike."""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

_LOOPBACK_NAMES = {"localhost"}


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def redirect_uri_problem(uri: Any) -> str | None:
    if not isinstance(uri, str) or len(uri) > 2000:
        return "Each redirect URI must be a string of at most 2000 characters."
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        return f"{uri!r} is not a valid URL."
    if parts.fragment or "#" in uri:
        return f"{uri!r} must not contain a fragment."
    if parts.scheme == "https" and parts.hostname:
        return None
    if parts.scheme == "http" and is_loopback(parts.hostname):
        return None
    return f"{uri!r} must use https, or http on a loopback address (127.0.0.1, [::1], localhost)."
