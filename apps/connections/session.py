"""One backend connection, held open by its own owner task.

anyio requires the transport and the SDK session to be entered and exited by the same
task, so a dedicated owner task holds the `async with` for the connection's whole life.
Callers then send requests on that session from their own tasks: the SDK dispatcher
correlates each response by request id, and a caller's timeout or cancellation makes it
send `notifications/cancelled` to the backend (a shielded "courtesy cancel").
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, encode_header_value
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from apps.connections import sdk
from apps.connections.errors import ServerStartFailed
from apps.connections.hooks import (
    ELICITATION_COMPLETE,
    NOTES,
    NotificationHook,
    ProgressFn,
    Relay,
)
from apps.connections.specs import ServerSpec
from apps.connections.stderr import StderrTail
from apps.connections.transports import ChildProcess, open_transport
from apps.connections.transports.lean_http import LeanHttp, UseSdkPath
from apps.connections.transports.lean_stdio import LeanStdio

logger = logging.getLogger(__name__)

T = TypeVar("T")
CLIENT_INFO = types.Implementation(name="mcp-hub", version="1.0")
_STOP_MARGIN = 4.0  # beyond the child's grace period: SIGTERM + SIGKILL waits
_LOG_FLUSH_TIMEOUT = 5.0  # how long a finished call waits for its relayed log lines to be delivered
# At start, how long a Streamable HTTP session waits for its GET stream to be answered.
_GET_STREAM_WAIT = 2.0
# Transports that tell which of our requests a server message belongs to: Streamable HTTP
# carries it on that request's response stream, and the SDK hands it over in the context of
# the task that sent the request (below: `_current_call`). Stdio and legacy SSE do not.
_ASSOCIATING_TRANSPORTS = frozenset({"streamable_http"})

# (connection, call id) of the request the running task is making; seen by the SDK's
# callbacks for server messages that arrived on that request's own stream.
_current_call: contextvars.ContextVar[tuple[Connection, int] | None] = contextvars.ContextVar(
    "mcp_pool_current_call", default=None
)


class _Call:
    """One in-flight request: its relay, and the chain of log lines being delivered to it."""

    __slots__ = ("relay", "tail")

    def __init__(self, relay: Relay) -> None:
        self.relay = relay
        self.tail: asyncio.Future[None] | None = None


class Listener(Protocol):
    """The pool's side: told once when a connection dies on its own, and when it is gone."""

    def connection_failed(self, conn: Connection, reason: str) -> None: ...

    def connection_closed(self, conn: Connection) -> None: ...


class Connection:
    def __init__(
        self,
        spec: ServerSpec,
        *,
        listener: Listener,
        stderr: StderrTail,
        connect_timeout: float,
        grace: float,
        relay_methods: frozenset[str],
        on_notification: NotificationHook | None,
        lean_requests: bool = True,
    ) -> None:
        self.spec = spec
        self.config_hash = spec.config_hash
        self.child = ChildProcess(stderr, on_exit=self._on_child_exit)
        self.child.grace = (
            0.0  # a child that never got ready (hung at initialize) gets no graceful exit
        )
        self._grace = grace
        self.client: Client | None = None
        # Plain requests after the handshake, past the SDK session (transports/lean_http.py, lean_stdio.py).
        self.lean: LeanHttp | LeanStdio | None = None
        self._lean_requests = lean_requests
        self.inflight = 0
        self.last_used = time.monotonic()
        self.launched_at = self.last_used
        self.failure: str | None = None
        self.stopping = False
        self._listener = listener
        self._connect_timeout = connect_timeout
        self._relay_methods = relay_methods
        self._on_notification = on_notification
        self._calls: dict[int, _Call] = {}  # in-flight requests that carry a relay, oldest first
        self._ids = itertools.count()
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._scope: anyio.CancelScope | None = None
        self._task: asyncio.Task[None] | None = None
        self._probe: asyncio.Task[None] | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def launch(self) -> None:
        self.launched_at = time.monotonic()
        self._task = asyncio.get_running_loop().create_task(
            self._own(), name=f"mcp-connection:{self.spec.name}"
        )
        self._task.add_done_callback(lambda _: self._listener.connection_closed(self))

    async def wait_ready(self) -> None:
        # Shielded: a caller giving up must not abort a start other callers are waiting for.
        await asyncio.shield(self._ready)

    def start_error(self) -> BaseException | None:
        return self._ready.exception() if self._ready.done() else None

    @property
    def starting(self) -> bool:
        return not self._ready.done()

    @property
    def usable(self) -> bool:
        return self.client is not None and self.failure is None and not self.stopping

    @property
    def closed(self) -> bool:
        return self._task is not None and self._task.done()

    async def _own(self) -> None:
        _current_call.set(None)  # this task's context was copied from whichever caller started us
        reason: str | None = None
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                scope.deadline = anyio.current_time() + self._connect_timeout
                async with self._build_client() as client:
                    scope.deadline = math.inf
                    self.client = client
                    if (
                        self.child.http is not None
                        and client.session.protocol_version not in MODERN_PROTOCOL_VERSIONS
                    ):
                        await self.child.http.wait_get_stream(_GET_STREAM_WAIT)
                    self.lean = self._make_lean(client)
                    if self.failure is None:
                        self.child.grace = self._grace
                    self._ready.set_result(None)
                    await self._stop.wait()
            if scope.cancelled_caught and not self._ready.done():
                reason = (
                    "connection closed during startup"
                    if self.stopping
                    else f"no answer to initialize within {self._connect_timeout:g}s"
                )
        except (
            Exception
        ) as exc:  # boundary: whatever the transport or handshake raised is reported, not leaked
            reason = self._describe_exit(exc)
        finally:
            self.client = None
            lean, self.lean = self.lean, None
            if lean is not None:
                await lean.aclose()
            self._settle(reason)

    def _make_lean(self, client: Client) -> LeanHttp | LeanStdio | None:
        version = client.session.protocol_version
        if not self._lean_requests or version is None or version in MODERN_PROTOCOL_VERSIONS:
            return None
        if self.child.direct is not None:
            return self.child.direct
        if (stdio := self.child.stdio) is not None:
            stdio.on_log = self._take_log
            return LeanStdio(stdio)
        link = self.child.http
        if link is None or link.proxied:
            return None
        return LeanHttp(link, client.session, version, self.fail)

    def _take_log(self, data: dict[str, Any]) -> bool:
        """A log line read from a stdio child, relayed in read order (before the result that follows it)."""
        try:
            message = types.LoggingMessageNotification.model_validate(data, by_name=False)
        except ValueError:
            return False  # the SDK session reports what it cannot read
        return self._relay_note("log", message)

    def leave_lean_path(self, why: str) -> None:
        """The backend needs the SDK's transport for plain requests too (see `UseSdkPath`)."""
        if self.lean is not None:
            logger.info(
                "server %r: plain requests go through the SDK's transport from now on (%s)",
                self.spec.name,
                why,
            )
            self.lean = None

    def _settle(self, reason: str | None) -> None:
        if not self._ready.done():
            reason = reason or "connection closed during startup"
            self._ready.set_exception(
                ServerStartFailed(self.spec.name, self._start_message(reason))
            )
            self._ready.exception()  # mark retrieved: a start nobody awaited must not log noise
        if reason is not None and not self.stopping:
            self.fail(reason)

    def _describe_exit(self, exc: BaseException) -> str:
        if (
            self.spec.transport == "stdio"
            and self.child.process is not None
            and not self.child.alive
        ):
            return f"process {self.child.exit_description()}"
        return describe_exception(exc)

    def _start_message(self, reason: str) -> str:
        tail = self.child.stderr.summary()
        return f"server {self.spec.name!r} failed to start: {reason}" + (
            f"; stderr: {tail}" if tail else ""
        )

    def _build_client(self) -> Client:
        callbacks: dict[str, Any] = {}
        if "sampling" in self._relay_methods:
            callbacks["sampling_callback"] = self._sampling
            # Tool use inside sampling (2025-11-25): the hub's own answer supports it.
            callbacks["sampling_capabilities"] = types.SamplingCapability(
                tools=types.SamplingToolsCapability()
            )
        if "elicitation" in self._relay_methods:
            callbacks["elicitation_callback"] = self._elicitation
        if "roots" in self._relay_methods:
            callbacks["list_roots_callback"] = self._list_roots
        return Client(
            open_transport(self.spec, self.child),
            mode=self.spec.mode,
            cache=None,  # the pool must always hit the wire; the catalog is the cache
            client_info=CLIENT_INFO,
            message_handler=self._on_message,
            **callbacks,
        )

    def fail(self, reason: str) -> None:
        """Mark the connection broken (crash, hang, lost link) and tear it down fast."""
        if self.failure is not None or self.stopping:
            return
        self.failure = reason
        self.child.grace = 0.0  # a broken child gets no graceful exit window
        self._listener.connection_failed(self, reason)
        self._stop.set()

    def _on_child_exit(self, reason: str) -> None:
        if not self.stopping:
            self.fail(f"process {reason}")

    def retire(self) -> None:
        """Stop taking new calls; close once the in-flight ones finish (hot reload)."""
        self.stopping = True
        if self.inflight == 0:
            self._stop.set()

    async def close(self) -> None:
        self.stopping = True
        self._stop.set()
        if self._task is None:
            return
        if self._ready.done():  # a ready connection sees the stop and ends in its grace period
            with anyio.move_on_after(self.child.grace + _STOP_MARGIN):
                await asyncio.shield(self._task)
        if not self._task.done():
            # Still starting, it sees no stop until initialize is answered (a hung server never
            # answers: Ctrl-C of `mcp_discover` waited 4 s more for it), or past its grace.
            if self._scope is not None:
                self._scope.cancel()
            else:
                self._task.cancel()  # not yet running: its own clean-up never runs
            await asyncio.wait({self._task}, timeout=_STOP_MARGIN)
            self._settle(None)  # its waiters hear it closed, if its clean-up did not tell them

    async def wait_failure(self, timeout: float) -> str | None:
        """After a dropped connection, wait briefly for the exit reason to be known."""
        with anyio.move_on_after(timeout):
            while self.failure is None and not self.closed:  # noqa: ASYNC110 - set from several places
                await asyncio.sleep(0.01)
        return self.failure

    # -- requests ----------------------------------------------------------------------

    @property
    def sdk_client(self) -> Client:
        """The SDK client of the open session (inside `request`, always there)."""
        if self.client is None:
            raise _connection_closed()
        return self.client

    async def request(
        self, fn: Callable[[Connection], Awaitable[T]], timeout: float, relay: Relay | None = None
    ) -> T:
        """Run `fn(self)` as one request: timeout, relay, in-flight count, drain on retire."""
        if self.client is None:
            raise _connection_closed()
        call_id = next(self._ids)
        call = None
        if relay is not None:
            call = self._calls[call_id] = _Call(relay)
        token = _current_call.set((self, call_id))
        self.inflight += 1
        try:
            async with asyncio.timeout(timeout):
                result = await fn(self)
                if call is not None and any(call.relay.handler(m) for m in NOTES):
                    await self._flush_logs(call)
                return result
        finally:
            _current_call.reset(token)
            if call is not None:
                del self._calls[call_id]
            self.inflight -= 1
            self.last_used = time.monotonic()
            if self.stopping and self.inflight == 0:
                self._stop.set()

    async def call_tool_raw(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        progress: ProgressFn | None,
        meta: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        """tools/call returning the result as the backend sent it (a JSON-ready dict).

        The SDK's typed path validates a result twice (the version's wire schema, then
        `CallToolResult`), and a caller forwarding JSON then dumps it again: ~half the CPU
        of a small call. This sends the same request on the lean path (one POST to a
        Streamable HTTP backend, one line to a stdio child) or, without one, through the
        session's dispatcher, and checks only the shape. Not used on 2026-07-28 sessions,
        whose calls may need the SDK's input-required rounds and header-mismatch retry;
        not checked against a tool's output schema (the end client may do that).
        """
        client = self.sdk_client
        session = client.session
        if session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return dump_result(
                await client.call_tool(
                    name, arguments, progress_callback=progress, meta=_meta(meta)
                )
            )
        lean = self.lean
        if lean is not None and (progress is None or lean.streams_progress):
            try:
                return _checked(await lean.call_tool(name, arguments, progress, meta))
            except UseSdkPath as exc:
                self.leave_lean_path(str(exc))
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if meta:
            params["_meta"] = dict(meta)
        data = {"method": "tools/call", "params": params}
        opts: dict[str, Any] = {}
        sdk.stamp(session, data, opts)  # the negotiated protocol-version header, as the SDK does
        opts.setdefault("headers", {})[MCP_NAME_HEADER] = encode_header_value(name)
        if progress is not None:
            opts["on_progress"] = progress
        return _checked(await sdk.send_raw_request(session, "tools/call", data["params"], opts))

    async def task_request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A task request (`contract.TASK_METHODS`) through the session's dispatcher, its result as the
        backend sent it: the SDK has the task types but validates a `tools/call` answer as a
        `CallToolResult`, and does not dispatch `tasks/*` itself."""
        session = self.sdk_client.session
        data = {"method": method, "params": params}
        opts: dict[str, Any] = {}
        sdk.stamp(session, data, opts)
        if method == "tools/call":
            opts.setdefault("headers", {})[MCP_NAME_HEADER] = encode_header_value(params["name"])
        result = await sdk.send_raw_request(session, method, params, opts)
        if not isinstance(result, dict):
            raise MCPError(types.INTERNAL_ERROR, f"{method}: the server answered a non-object")
        return result

    async def _flush_logs(self, call: _Call) -> None:
        """Let log lines the backend sent before its result reach the caller before the result."""
        await asyncio.sleep(
            0
        )  # the SDK's handler tasks for messages read before the result run first
        if call.tail is not None and not call.tail.done():
            with anyio.move_on_after(_LOG_FLUSH_TIMEOUT):
                await asyncio.shield(call.tail)

    @property
    def probing(self) -> bool:
        return self._probe is not None

    async def wait_probe(self) -> None:
        """Hold new calls while a liveness probe runs: they would likely hang too."""
        if self._probe is not None:
            await asyncio.wait({self._probe})

    def probe_soon(self, timeout: float) -> None:
        if self._probe is None and self.usable:
            self._probe = asyncio.get_running_loop().create_task(self._run_probe(timeout))

    async def _run_probe(self, timeout: float) -> None:
        try:
            await self.request(lambda c: c.sdk_client.session.send_ping(), timeout)
        except TimeoutError:
            self.fail(f"hung: no answer to ping within {timeout:g}s")
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                self.fail("connection closed")
            # Any other JSON-RPC error is an answer: the backend is alive.
        except Exception as exc:  # boundary: a probe must never raise into nobody
            self.fail(describe_exception(exc))
        finally:
            self._probe = None

    # -- server-initiated messages -----------------------------------------------------

    async def _on_message(self, message: types.ServerNotification | Exception) -> None:
        if isinstance(message, Exception):
            logger.warning("server %r sent something unreadable: %s", self.spec.name, message)
            return
        # Progress belongs to one call and already reached that call's progress callback.
        if isinstance(message, types.ProgressNotification):
            return
        if isinstance(message, types.LoggingMessageNotification) and self._relay_note(
            "log", message
        ):
            return
        if isinstance(message, types.ElicitCompleteNotification) and self._relay_note(
            ELICITATION_COMPLETE, message
        ):
            return
        if self._on_notification is None:
            return
        try:
            await self._on_notification(self.spec.name, message)
        except Exception:
            logger.exception("on_notification hook failed for server %r", self.spec.name)

    def _relay_note(
        self,
        method: str,
        message: types.LoggingMessageNotification | types.ElicitCompleteNotification,
    ) -> bool:
        """Hand a log line (or a URL elicitation's completion) to the call it belongs to; False
        when no call claims it.

        Runs synchronously in the SDK's handler task, before the result of the same call
        can wake its caller: the delivery is chained in arrival order and the call waits
        for the chain before returning (see `request`).
        """
        call = self._claimant(method, fallback=self.spec.transport not in _ASSOCIATING_TRANSPORTS)
        if call is None:
            return False
        params = message.params.model_dump(by_alias=True, mode="json", exclude_none=True)
        call.tail = asyncio.ensure_future(
            _deliver_after(call.tail, call.relay.handler(method), params, self.spec.name)
        )
        return True

    def _claimant(self, method: str, *, fallback: bool) -> _Call | None:
        """The in-flight call a server message belongs to, if it has a handler for `method`.

        Known exactly when the message came on that call's own stream. Otherwise (stdio, legacy
        SSE: nothing says which call a message is for), if `fallback`, the oldest call in flight
        with such a handler — only when every call in flight is one caller's (`Relay.caller`):
        a log line, a sampling request (answered with the caller's model) or a form shown to
        another user would tell them what someone else's call is doing.
        """
        current = _current_call.get()
        if current is not None and current[0] is self:
            call = self._calls.get(current[1])
            return call if call is not None and call.relay.handler(method) is not None else None
        if not fallback or not self._one_caller():
            return None
        return next((c for c in self._calls.values() if c.relay.handler(method) is not None), None)

    def _one_caller(self) -> bool:
        """Every call in flight carries a relay, and all of them the same known caller."""
        if self.inflight != len(self._calls):  # a call without a relay: its caller is unknown
            return False
        if len(self._calls) == 1:
            return True
        callers = {call.relay.caller for call in self._calls.values()}
        return len(callers) == 1 and None not in callers

    async def _sampling(
        self, ctx: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> Any:
        return await self._relay("sampling/createMessage", params)

    async def _elicitation(
        self, ctx: ClientRequestContext, params: types.ElicitRequestParams
    ) -> Any:
        return await self._relay("elicitation/create", params)

    async def _list_roots(self, ctx: ClientRequestContext) -> Any:
        return await self._relay("roots/list")

    async def _relay(self, method: str, *args: Any) -> Any:
        # A request with no known call goes to a call in flight when all are one caller's (see
        # _claimant): one of theirs surely caused it, and answering beats failing the tool.
        call = self._claimant(method, fallback=True)
        if call is None:
            why = (
                f"{self.inflight} calls of different callers are in flight on this connection "
                "and nothing says which one it is for"
                if self.inflight > 1 and not self._one_caller()
                else f"no client is attached to answer {method}"
            )
            return types.ErrorData(code=types.INVALID_REQUEST, message=why)
        handler = call.relay.handler(method)
        assert handler is not None
        try:
            return await handler(*args)
        except MCPError as exc:
            return exc.error
        except Exception as exc:  # boundary: the relay's failure becomes the backend's error reply
            return types.ErrorData(code=types.INTERNAL_ERROR, message=describe_exception(exc))


async def _deliver_after(
    previous: asyncio.Future[None] | None, log: Any, params: dict[str, Any], server: str
) -> None:
    if previous is not None:
        await asyncio.wait({previous})
    try:
        await log(params)
    except Exception:
        logger.exception("relay log handler failed for server %r", server)


def _connection_closed() -> MCPError:
    return MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")


def _checked(raw: Any) -> dict[str, Any]:
    if type(raw) is dict and type(raw.get("content")) is list and "resultType" not in raw:
        return raw
    # Not the plain shape: let the model judge it (raises on garbage) and normalise it.
    return dump_result(types.CallToolResult.model_validate(raw, by_name=False))


def dump_result(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def _meta(meta: Mapping[str, Any] | None) -> Any:
    return dict(meta) if meta is not None else None


def describe_exception(exc: BaseException) -> str:
    """One readable line for an error, unwrapping the ExceptionGroups anyio produces."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, MCPError) else f"{type(exc).__name__}: {text}"
