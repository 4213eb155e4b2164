"""Where an authorization response may be sent: https anywhere, plain http only to this machine
(OAuth 2.1 §2.3.1, RFC 8252 §7.3), and the private-use schemes of native apps the operator lists
(MCPHUB_OAUTH_NATIVE_REDIRECT_SCHEMES, RFC 8252 §7.1); never with credentials in the URL
(user:password@host: a host that is not what it seems to a reader). Used for registered, updated
(RFC 7592) and CIMD clients alike."""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

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
    if "@" in parts.netloc:  # not echoed: it may hold a password
        return "A redirect URI must not carry a user name or password (user:password@host)."
    if parts.scheme == "https" and parts.hostname:
        return None
    if parts.scheme == "http" and is_loopback(parts.hostname):
        return None
    if parts.scheme in settings.MCPHUB_OAUTH_NATIVE_REDIRECT_SCHEMES and parts.scheme not in (
        "http",
        "https",
    ):
        return None
    return f"{uri!r} must use https, or http on a loopback address (127.0.0.1, [::1], localhost)."


def form_action_source(uri: str) -> str:
    """The CSP source that lets a form's redirect reach `uri`."""
    parts = urlsplit(uri)
    return (
        f"{parts.scheme}://{parts.netloc}"
        if parts.scheme in ("http", "https")
        else f"{parts.scheme}:"
    )
