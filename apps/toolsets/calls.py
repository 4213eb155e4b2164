"""The one way to call a tool as a user: the gateway's `tools/call`, chat turns, runs, the hub's
own tools and dynamic mode's meta-tools all come through here.

A call goes to the built-in server registered under its server's name, if any (`register_builtin`:
the hub's own tools answer as the caller, nothing connects to them), else to the backend through
the pool with the endpoint owner's spec (their `${user:…}` values) and upstream OAuth token.
Whatever happens, the call is logged (calllog). A pool failure is an `isError` result the model or
client can read; a backend's JSON-RPC error is raised as `ToolError`, which each caller maps to its
own shape (the gateway forwards it as a JSON-RPC error, chat turns it into an `isError` result).
What the backend asks back during the call (sampling, roots) goes to the caller's relay, and what
the caller cannot answer to the registered host (`register_host`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from mcp import MCPError

from apps.connections.default import get_pool
from apps.connections.errors import HubUnavailable, PoolError, WorkerLost
from apps.connections.hooks import Relay
from apps.core.hotstate import OUTAGE_ERRORS
from apps.credentials.errors import CredentialsMissing
from apps.credentials.upstream.calls import with_user_token
from apps.toolsets import calllog
from apps.toolsets.exposure import EndpointView, Exposed
from apps.toolsets.models import read_only

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
# While the hub cannot hand a call over (hub_patience), it asks again after these waits (doubling).
HUB_FIRST_WAIT = 0.2
HUB_LONGEST_WAIT = 2.0


@dataclass(frozen=True, slots=True)
class BuiltinCall:
    """One call to a built-in server's tool, made as `user_id` on `endpoint_id`."""

    user_id: int
    endpoint_id: int | None
    tool: str  # the tool's own name on its server, not the exposed one
    arguments: dict[str, Any]
    progress: Progress | None


# A built-in server's handler: an MCP tool result as JSON, never raising but on cancel.
Builtin = Callable[[BuiltinCall], Awaitable[dict[str, Any]]]
_builtins: dict[str, Builtin] = {}


def register_builtin(server: str, handler: Builtin) -> None:
    """Answer calls to `server`'s tools with `handler` (an app's `ready()` registers its own)."""
    _builtins[server] = handler


# What answers a backend's server→client requests that the caller cannot (sampling by the user's
# own model, roots from the endpoint's settings): given (user_id, endpoint_id, the caller's relay or
# None, the backend server's name), the relay to call with, held for the call's length (on exit,
# what still waits for the user is withdrawn). The chat app registers the hub's answers
# (apps/chat/host.py); the same ones then serve chat turns, runs and gateway calls alike.
HostRelay = Callable[
    [int, "int | None", "Relay | None", str], AbstractContextManager["Relay | None"]
]
_host: list[HostRelay] = []


def register_host(fn: HostRelay) -> None:
    """Let `fn` fill in the handlers a caller's relay lacks (one host: a second call replaces it)."""
    _host[:] = [fn]


# Given a CredentialsMissing that names the page where the user fixes it (`fill_at`), the error to
# raise instead of the isError result: the gateway's URL elicitation for clients that declare it.
AskUser = Callable[[CredentialsMissing], Awaitable["ToolError"]]


class ToolError(Exception):
    """The backend answered the call with a JSON-RPC error instead of a result."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def error_result(message: str) -> dict[str, Any]:
    """A failed call as a tool result: the text says what went wrong, `isError` that it did."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


async def call_tool(
    *,
    user_id: int,
    endpoint_id: int | None,
    view: EndpointView,
    exposed: Exposed,
    arguments: dict[str, Any],
    progress: Progress | None = None,
    relay: Relay | None = None,
    hub_patience: float = 0.0,
    ask_user: AskUser | None = None,
) -> dict[str, Any]:
    """Call `exposed` as `user_id` and log it: the result as JSON (`isError` on a pool failure);
    raises `ToolError` for the backend's JSON-RPC error (and `ask_user`'s when it applies).
    `hub_patience`: seconds to keep trying while the hub itself cannot hand the call over
    (HubUnavailable: it reached no backend), for callers that wait (runs, chat turns) rather than
    answer at once (MCP clients get the error)."""
    hosted = _host[0](user_id, endpoint_id, relay, exposed.server) if _host else nullcontext(relay)
    with hosted as relay:
        work = _answer(
            user_id, endpoint_id, view, exposed, arguments, progress, relay, hub_patience, ask_user
        )
        return await logged(
            user_id=user_id,
            endpoint_id=endpoint_id,
            exposed=exposed,
            arguments=arguments,
            work=work,
        )


async def logged(
    *,
    user_id: int | None,
    endpoint_id: int | None,
    exposed: Exposed,
    arguments: dict[str, Any],
    work: Awaitable[dict[str, Any]],
) -> dict[str, Any]:
    """Await `work`, the call of `exposed`, and log how it went (a raised error is a failed call)."""
    started, clock = time.time(), time.perf_counter()
    try:
        result = await work
    except asyncio.CancelledError:
        _record(user_id, endpoint_id, exposed, started, clock, "Cancelled by the user", arguments)
        raise
    except Exception as exc:
        error = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        _record(user_id, endpoint_id, exposed, started, clock, error, arguments)
        raise
    error = calllog.error_text(result) if result.get("isError") else ""
    _record(user_id, endpoint_id, exposed, started, clock, error, arguments)
    return result


def _record(
    user_id: int | None,
    endpoint_id: int | None,
    exposed: Exposed,
    started: float,
    clock: float,
    error: str,
    arguments: dict[str, Any],
) -> None:
    calllog.record(
        user_id,
        endpoint_id,
        exposed,
        started,
        clock,
        ok=not error,
        error=error,
        arguments=arguments,
    )


async def _patiently(attempt: Callable[[], Awaitable[Any]], patience: float) -> Any:
    """`attempt()`, tried again with backoff while the hub cannot hand the call over, for up to
    `patience` seconds (a Redis restart, no pool worker registered yet). MCP clients (patience 0)
    hear at once: the gateway answers a Redis outage 503 + Retry-After."""
    deadline, wait = time.monotonic() + patience, HUB_FIRST_WAIT
    while True:
        try:
            return await attempt()
        except (HubUnavailable, *OUTAGE_ERRORS):
            # Raised before the call was handed over (routing and the reply subscription read
            # Redis first; a failed push is HubUnavailable only when it surely did not go).
            if time.monotonic() + wait > deadline:
                raise
            await asyncio.sleep(wait)
            wait = min(wait * 2, HUB_LONGEST_WAIT)


async def _answer(
    user_id: int,
    endpoint_id: int | None,
    view: EndpointView,
    exposed: Exposed,
    arguments: dict[str, Any],
    progress: Progress | None,
    relay: Relay | None,
    hub_patience: float,
    ask_user: AskUser | None,
) -> dict[str, Any]:
    builtin = _builtins.get(exposed.server)
    if builtin is not None:
        return await builtin(
            BuiltinCall(user_id, endpoint_id, exposed.backend_name, arguments, progress)
        )

    if relay is not None and relay.caller != user_id:  # whose call it is: see Relay.caller
        relay = dataclasses.replace(relay, caller=user_id)

    def call(spec: Any) -> Awaitable[Any]:
        return get_pool().call_tool(
            spec,
            exposed.backend_name,
            arguments,
            timeout=spec.timeout,
            progress_callback=progress,
            relay=relay,
            raw=True,
        )

    try:
        spec = view.spec(exposed.server)  # the owner's own spec; CredentialsMissing is a PoolError

        # The owner's own upstream OAuth token, refreshed once if the backend refuses it.
        def attempt() -> Awaitable[Any]:
            return with_user_token(spec, view.owner_id, call)

        try:
            return await _patiently(attempt, hub_patience)
        except WorkerLost:
            # The pool worker running it was lost: a caller that waits (a run, a chat turn) sends
            # a read-only call once more, to the worker that now owns the server; any other call
            # may have run, and is not repeated unasked.
            if hub_patience <= 0 or not read_only(exposed.entry.get("annotations")):
                raise
            return await _patiently(attempt, hub_patience)
    except MCPError as exc:
        raise ToolError(exc.code, exc.message, exc.data) from None
    except PoolError as exc:
        if ask_user is not None and isinstance(exc, CredentialsMissing) and exc.fill_at:
            raise await ask_user(exc) from None
        return error_result(f"Tool {exposed.name} failed: {exc.message}")
