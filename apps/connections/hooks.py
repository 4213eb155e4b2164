"""How server-initiated traffic reaches whoever should see it.

Notifications that concern the whole server (list_changed, resources/updated, logging
outside any call) go to the pool's `on_notification` hook. Requests a backend sends *to
us* (sampling, elicitation, roots), and the log lines and URL elicitations' completions
(`notifications/elicitation/complete`) it sends during a call, belong to the end
client whose call triggered them: a caller passes a `Relay` with its call and the pool
forwards those to it (log lines before the call's result, in the order they came).

Over Streamable HTTP a server message arrives on the stream of the request it belongs
to, so it reaches exactly that call. Stdio and legacy SSE do not say which of our
requests it belongs to: with several relaying calls in flight on one backend, the
oldest one that has a handler for it is asked (and log lines outside any relaying
call go to `on_notification`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

SamplingFn = Callable[
    [types.CreateMessageRequestParams], Awaitable["types.CreateMessageResult | types.ErrorData"]
]
ElicitationFn = Callable[
    [types.ElicitRequestParams], Awaitable["types.ElicitResult | types.ErrorData"]
]
ListRootsFn = Callable[[], Awaitable["types.ListRootsResult | types.ErrorData"]]
NotificationHook = Callable[[str, types.ServerNotification], Awaitable[None]]
ProgressFn = Callable[[float, "float | None", "str | None"], Awaitable[None]]
# Receives the `notifications/message` params as a JSON-ready dict: {"level", "data", "logger"?}.
LogFn = Callable[[dict[str, Any]], Awaitable[None]]
# Receives the `notifications/elicitation/complete` params as a JSON-ready dict: {"elicitationId"}.
NoteFn = Callable[[dict[str, Any]], Awaitable[None]]
ELICITATION_COMPLETE = "notifications/elicitation/complete"


@dataclass(frozen=True)
class Relay:
    """A caller's answers to server→client requests made during its call, and its log sink.

    `log` gets each `notifications/message` the backend sends during the call, as the
    params dict (already JSON-ready: write it straight into the client's stream).
    `elicitation_complete` gets each `notifications/elicitation/complete` sent during the call
    (a URL elicitation the user finished), in order with the log lines.
    `caller` says whose call it is (a user id; plain JSON): where nothing says which call a
    server message belongs to (stdio, legacy SSE), it goes to one only when every call in flight
    on the connection is the same caller's.
    """

    sampling: SamplingFn | None = None
    elicitation: ElicitationFn | None = None
    list_roots: ListRootsFn | None = None
    log: LogFn | None = None
    elicitation_complete: NoteFn | None = None
    caller: int | str | None = None

    def handler(self, method: str) -> Callable[..., Awaitable[object]] | None:
        if method == "sampling/createMessage":
            return self.sampling
        if method == "elicitation/create":
            return self.elicitation
        if method == "roots/list":
            return self.list_roots
        if method == "log":
            return self.log
        if method == ELICITATION_COMPLETE:
            return self.elicitation_complete
        return None

    def methods(self) -> list[str]:
        """The relayed kinds this caller handles (as named on the wire to a pool worker)."""
        return [m for m in RELAYABLE if self.handler(m) is not None]


RELAYABLE = (
    "sampling/createMessage",
    "elicitation/create",
    "roots/list",
    "log",
    ELICITATION_COMPLETE,
)
# Notifications relayed to the call they belong to, in order, before its result.
NOTES = ("log", ELICITATION_COMPLETE)
