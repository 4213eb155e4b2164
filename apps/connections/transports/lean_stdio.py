"""The lean request path to a stdio backend: one JSON line out, its answer taken as read.

On stdio the SDK session costs the web process (embedded) or the worker most of a call's
CPU that is not HTTP: a pydantic model of the request, a dispatcher entry, an
OpenTelemetry span, anyio cancel scopes and memory streams between three tasks, and the
response's model. Once the SDK has done the handshake, a plain request is one line to
the child's stdin; the stdio reader (`StdioLink.take`) hands its answer straight back.

Same behaviour as the SDK path: log lines a relaying call claims reach it before the
result (the reader relays them in the order read), sampling/elicitation/roots requests
and every other notification still go through the SDK session, a caller that gives up
sends `notifications/cancelled`, a child that dies fails the request as closed. A call
with a progress callback keeps the SDK path (stdio does not say which call a progress
notification belongs to but by its token, which the SDK dispatcher tracks).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from apps.connections.transports.lean_http import result_of, tool_call_params
from apps.connections.transports.stdio import StdioLink

logger = logging.getLogger(__name__)

# Far above the SDK session's own ids (from 0): the child never sees one id from both paths.
_ID_BASE = 1_000_000_000
_WRITE_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)


class LeanStdio:
    streams_progress = (
        False  # calls with a progress callback take the SDK path (see module docstring)
    )

    def __init__(self, link: StdioLink) -> None:
        self.link = link
        self._ids = itertools.count(_ID_BASE)
        self._background: set[asyncio.Task[None]] = set()

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        progress: Any,
        meta: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        return await self.request("tools/call", tool_call_params(name, arguments, meta))

    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        link = self.link
        if link.closed:
            raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        link.pending[request_id] = future
        try:
            await link.send(json.dumps(message).encode() + b"\n")
            reply = await future
        except _WRITE_ERRORS:
            link.pending.pop(request_id, None)
            raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed") from None
        except BaseException:
            if link.pending.pop(request_id, None) is not None and not link.closed:
                # Abandoned (timeout, caller cancelled) while the child works on it: tell it to stop.
                self._spawn(self._cancel(request_id))
            raise
        return result_of(reply)

    async def _cancel(self, request_id: int) -> None:
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "the caller gave up"},
        }
        try:
            await self.link.send(json.dumps(note).encode() + b"\n")
        except _WRITE_ERRORS:
            pass  # the child is gone: nothing left to cancel

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def aclose(self) -> None:
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
