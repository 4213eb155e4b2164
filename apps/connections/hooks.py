"""How server-initiated traffic reaches whoever should see it.

Notifications that concern the whole server (list_changed, resources/updated, logging)
go to the pool's `on_notification` hook. Requests a backend sends *to us* (sampling,
elicitation, roots) belong to the end client whose call triggered them: a caller passes
a `Relay` with its call and the pool forwards those requests to it.

Legacy MCP over stdio does not say which of our requests a server request belongs to,
so with several relaying calls in flight on one backend the oldest one is asked.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import mcp_types as types

SamplingFn = Callable[[types.CreateMessageRequestParams], Awaitable["types.CreateMessageResult | types.ErrorData"]]
ElicitationFn = Callable[[types.ElicitRequestParams], Awaitable["types.ElicitResult | types.ErrorData"]]
ListRootsFn = Callable[[], Awaitable["types.ListRootsResult | types.ErrorData"]]
NotificationHook = Callable[[str, types.ServerNotification], Awaitable[None]]
ProgressFn = Callable[[float, "float | None", "str | None"], Awaitable[None]]


@dataclass(frozen=True)
class Relay:
    """A caller's answers to server→client requests made during its call."""

    sampling: SamplingFn | None = None
    elicitation: ElicitationFn | None = None
    list_roots: ListRootsFn | None = None

    def handler(self, method: str) -> Callable[..., Awaitable[object]] | None:
        return {
            "sampling/createMessage": self.sampling,
            "elicitation/create": self.elicitation,
            "roots/list": self.list_roots,
        }.get(method)
