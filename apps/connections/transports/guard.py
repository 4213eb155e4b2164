"""The outbound address policy, as this library receives it from the app layer.

A spec marked `public_only` (its URL was chosen by a user who is not staff) connects only through
the guard installed with `install()`: apps.catalog installs apps.core.outbound's policy at start-up
in every process (the library imports no app). Were none installed, such a spec could not connect
at all — failing closed, never open.
"""

from __future__ import annotations

from typing import Protocol

import httpx2

_CLOSED = "Cannot connect: no outbound address policy is installed in this process."


class Guard(Protocol):
    refused: str  # the one text of any failure under the policy

    def async_transport(self, inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport: ...

    def sync_transport(self, inner: httpx2.BaseTransport) -> httpx2.BaseTransport: ...

    async def aaddresses(self, host: str, port: int) -> list[str]:
        """The permitted addresses of host:port; OSError (its text safe to show) when there are none."""
        ...


_installed: Guard | None = None


def install(guard: Guard) -> None:
    global _installed
    _installed = guard


def guard(public_only: bool) -> Guard | None:
    """The guard a connection goes through: None when the target needs none."""
    if not public_only:
        return None
    return _installed or _RefuseAll()


def async_client_kwargs(public_only: bool, **transport_kwargs: object) -> dict[str, object]:
    """What an httpx2.AsyncClient needs to go through the guard (nothing when it needs none):
    its transport, and no environment proxy — a proxy would make the connection the guard refused."""
    chosen = guard(public_only)
    if chosen is None:
        return {}
    return {
        "transport": chosen.async_transport(httpx2.AsyncHTTPTransport(**transport_kwargs)),
        "trust_env": False,
    }


def sync_client_kwargs(public_only: bool) -> dict[str, object]:
    chosen = guard(public_only)
    if chosen is None:
        return {}
    return {"transport": chosen.sync_transport(httpx2.HTTPTransport()), "trust_env": False}


class _RefuseAll:
    refused = _CLOSED

    def async_transport(self, inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
        return _Refusing()

    def sync_transport(self, inner: httpx2.BaseTransport) -> httpx2.BaseTransport:
        return _Refusing()

    async def aaddresses(self, host: str, port: int) -> list[str]:
        raise OSError(_CLOSED)


class _Refusing(httpx2.AsyncBaseTransport, httpx2.BaseTransport):
    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError(_CLOSED, request=request)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError(_CLOSED, request=request)
