"""Every use of the `mcp` SDK's private API (and of httpx2's, its HTTP client), in one place.

The lean request path (session.Connection.call_tool_raw, transports/lean_http.py) sends a
request past the SDK's typed layer and hands what a backend sends back to the SDK session's
own callbacks; the transports name the SDK's stream-pair type. None of that is public API,
so an SDK upgrade may move or rename it: `missing()` lists what is no longer where this
module reaches for it, and `tests/connections/test_sdk_fence.py` fails naming it.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import httpx2
from mcp.client._transport import TransportStreams
from mcp.client.session import ClientSession

__all__ = [
    "TransportStreams",
    "answer_request",
    "deliver_notification",
    "missing",
    "proxied",
    "send_raw_request",
    "stamp",
]


def stamp(session: ClientSession, data: dict[str, Any], opts: dict[str, Any]) -> None:
    """Add what the session adds to every request (the negotiated protocol-version header)."""
    session._stamp(data, opts)  # type: ignore[arg-type]


async def send_raw_request(
    session: ClientSession, method: str, params: Mapping[str, Any] | None, opts: dict[str, Any]
) -> Any:
    """Send a request through the session's dispatcher: its result as JSON, not validated."""
    dispatcher = session._dispatcher
    return await dispatcher.send_raw_request(method, params, opts)  # type: ignore[arg-type]


async def deliver_notification(
    session: ClientSession, method: str, params: Mapping[str, Any] | None
) -> None:
    """A notification read outside the SDK's transport, routed as if the SDK had read it."""
    await session._on_notify(None, method, params)  # type: ignore[arg-type]


async def answer_request(
    session: ClientSession, request_id: Any, method: str, params: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A server→client request read outside the SDK's transport, answered by the session's
    callbacks (sampling, elicitation, roots); raises `MCPError` for an error reply."""
    context = SimpleNamespace(request_id=request_id)
    return await session._on_request(context, method, params)  # type: ignore[arg-type]


def proxied(http: httpx2.AsyncClient, url: str) -> bool:
    """httpx2 would reach `url` through a proxy (environment settings), not its own transport."""
    return http._transport_for_url(httpx2.URL(url)) is not http._transport


# (where, the parameters the calls above pass, in order) for each private callable used.
_CALLABLES = {
    "ClientSession._stamp": ("data", "opts"),
    "ClientSession._dispatcher.send_raw_request": ("method", "params", "opts"),
    "ClientSession._on_notify": ("dctx", "method", "params"),
    "ClientSession._on_request": ("dctx", "method", "params"),
    "httpx2.AsyncClient._transport_for_url": ("url",),
}


def missing(session: ClientSession, http: httpx2.AsyncClient) -> list[str]:
    """What this module uses that `session` (a fresh one) and `http` no longer have as used."""
    found = {
        "ClientSession._stamp": getattr(session, "_stamp", None),
        "ClientSession._dispatcher.send_raw_request": getattr(
            getattr(session, "_dispatcher", None), "send_raw_request", None
        ),
        "ClientSession._on_notify": getattr(session, "_on_notify", None),
        "ClientSession._on_request": getattr(session, "_on_request", None),
        "httpx2.AsyncClient._transport_for_url": getattr(http, "_transport_for_url", None),
    }
    problems = [f"{where}: gone" for where, fn in found.items() if not callable(fn)]
    for where, expected in _CALLABLES.items():
        fn = found[where]
        if callable(fn) and _leading_parameters(fn, len(expected)) != expected:
            problems.append(f"{where}: parameters now {_leading_parameters(fn, 99)}")
    if not hasattr(http, "_transport"):
        problems.append("httpx2.AsyncClient._transport: gone")
    return problems


def _leading_parameters(fn: Any, count: int) -> tuple[str, ...]:
    try:
        names = tuple(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return ()
    return names[:count]
