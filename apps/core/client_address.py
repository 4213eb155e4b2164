"""The address a request comes from, the one every per-client limit counts by (the sign-in lockout,
OAuth client registrations, slow requests).

With no trusted proxy (`MCPHUB_TRUSTED_PROXIES=0`, the default) it is the socket's peer, whatever
`X-Forwarded-For` says: any client can write that header. Behind N reverse proxies that each append
the address they received from, the Nth entry from the right is the client the outermost one
saw; entries further left were written by the client and are ignored.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from django.conf import settings
from django.http import HttpRequest


def client_address(peer: str, forwarded_for: Iterable[str] = ()) -> str:
    """`peer` is the socket's address; `forwarded_for` the request's `X-Forwarded-For` values."""
    trusted = settings.MCPHUB_TRUSTED_PROXIES
    if trusted <= 0:
        return peer
    hops = [hop.strip() for value in forwarded_for for hop in value.split(",")]
    if len(hops) < trusted:  # it did not come through every proxy: only the socket is known
        return peer
    try:
        return str(ipaddress.ip_address(hops[-trusted]))
    except ValueError:
        return peer


def request_client_address(request: HttpRequest) -> str:
    """The client address of a Django request (also django-axes' `AXES_CLIENT_IP_CALLABLE`)."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR")
    return client_address(request.META.get("REMOTE_ADDR", ""), [forwarded] if forwarded else [])
