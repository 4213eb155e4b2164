"""The in-process connection pool: lazy connections, caps, restarts, hot reload.

One `Pool` per event loop. It opens a backend on first use and keeps it; idle ones are
closed by a reaper. Every operation takes the spec, so a changed config (different
`config_hash`) is noticed on the next call: the old connection drains while the new one
takes new calls. Failures feed a per-server breaker (backoff, then circuit open).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar

import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from apps.connections.breaker import Breaker, BreakerPolicy
from apps.connections.contract import TASK_METHODS
from apps.connections.errors import CallTimeout, PoolError, ServerCrashed, ServerUnavailable
from apps.connections.hooks import NotificationHook, ProgressFn, Relay
from apps.connections.listing import Discovery, collect_pages
from apps.connections.session import Connection
from apps.connections.specs import ServerSpec, server_of
from apps.connections.stderr import MARKER, StderrTail

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class PoolOptions:
    """Tunables; `settings.MCPHUB_POOL` keys map one to one (see `from_mapping`)."""

    max_sessions: int = 256
    # Requests in flight to one server; past it a call fails at once with a clear error. Never a
    # queue: an instant call must not wait behind slow ones (an MCP session multiplexes them).
    max_inflight_per_server: int = 512
    # Per-user connections of one server (specs with a `partition`: a stdio child each); past it
    # the least recently used idle one is closed, or the start fails if all are busy.
    max_partitions_per_server: int = 64
    start_concurrency: int = 8
    idle_timeout: float = 600.0
    default_timeout: float = 60.0
    connect_timeout: float = 30.0
    retry_wait: float = (
        0.5  # after a failed start, how long a call waits for the retry before failing fast
    )
    probe_timeout: float = 5.0
    shutdown_grace: float = 2.0
    drain_timeout: float = 120.0
    stderr_lines: int = 500
    stderr_bytes: int = 64 * 1024
    relay: frozenset[str] = frozenset({"sampling", "elicitation", "roots"})
    # A raw tools/call (the gateway's) skips the SDK client session after its handshake: one POST
    # to a Streamable HTTP backend, one line to a stdio child (transports/lean_http.py,
    # lean_stdio.py); False sends every request through the SDK's client session.
    lean_requests: bool = True
    breaker: BreakerPolicy = field(default_factory=BreakerPolicy)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> PoolOptions:
        known = {k: v for k, v in values.items() if k in cls.__dataclass_fields__}
        if "breaker" in known and isinstance(known["breaker"], Mapping):
            known["breaker"] = BreakerPolicy(**known["breaker"])
        if "relay" in known:
            known["relay"] = frozenset(known["relay"])
        return cls(**known)


class _Server:
    """Everything the pool keeps per pool key (a server name, or `name#partition` for one
    user's connection of a shared server), across connections and restarts."""

    def __init__(self, key: str, options: PoolOptions) -> None:
        self.key = key
        self.name = server_of(key)
        self.breaker = Breaker(self.name, options.breaker)
        self.stderr = StderrTail(options.stderr_lines, options.stderr_bytes)
        self.conn: Connection | None = None
        self.lock = asyncio.Lock()
        self.inflight = 0
        self.starts = 0
        self.failures = 0
        self.calls = 0
        self.last_failure_at = 0.0
        self.last_start_error: PoolError | None = None  # until a start succeeds
        self.starter: asyncio.Task[Connection] | None = None
        self.config_hash = ""

    def start_finished(self, task: asyncio.Task[Connection]) -> None:
        self.starter = None
        if not task.cancelled():
            task.exception()  # retrieved: a start whose callers all gave up must not log noise

    @property
    def restarts(self) -> int:
        return max(0, self.starts - 1)


class Pool:
    """MCP client pool, implementing `PoolAPI`; every method takes the spec (module docstring)."""

    def __init__(
        self, options: PoolOptions | None = None, *, on_notification: NotificationHook | None = None
    ) -> None:
        self.options = options or PoolOptions()
        self.on_notification = on_notification
        self._servers: dict[str, _Server] = {}  # by pool key (`ServerSpec.key`)
        self._inflight: dict[
            str, int
        ] = {}  # by server name: every partition counts against one cap
        self._retired: set[Connection] = set()
        self._start_gate = asyncio.Semaphore(self.options.start_concurrency)
        self._starting = 0
        self._max_starting = 0
        self._reaper: asyncio.Task[None] | None = None
        self._closed = False

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- public operations -------------------------------------------------------------

    async def call_tool(
        self,
        spec: ServerSpec,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress_callback: ProgressFn | None = None,
        relay: Relay | None = None,
        meta: Mapping[str, Any] | None = None,
        raw: bool = False,
    ) -> Any:
        """The backend's `CallToolResult`; with `raw=True`, the result as a JSON-ready dict.

        `raw` is for callers that forward the result as JSON (the gateway): it skips the
        SDK's two validations and the dump back to JSON (see `Connection.call_tool_raw`).
        """
        args = dict(arguments) if arguments is not None else None
        if raw:
            fn: Callable[[Connection], Awaitable[Any]] = lambda c: c.call_tool_raw(  # noqa: E731
                name, args, progress_callback, meta
            )
        else:
            fn = lambda c: c.sdk_client.call_tool(  # noqa: E731
                name, args, progress_callback=progress_callback, meta=_meta(meta)
            )
        return await self._run(spec, fn, timeout, relay, what="tools/call", target=name)

    async def task_request(
        self,
        spec: ServerSpec,
        method: str,
        params: Mapping[str, Any],
        *,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """As `PoolAPI.task_request`; any other method is a ValueError (nothing is sent)."""
        if method not in TASK_METHODS:
            raise ValueError(f"not a task request: {method}")
        return await self._run(
            spec, lambda c: c.task_request(method, dict(params)), timeout, what=method
        )

    async def list_tools(
        self, spec: ServerSpec, *, timeout: float | None = None
    ) -> list[types.Tool]:
        return await self._run(
            spec,
            lambda c: collect_pages(lambda cur: c.sdk_client.list_tools(cursor=cur), _tools),
            timeout,
        )

    async def list_resources(
        self, spec: ServerSpec, *, timeout: float | None = None
    ) -> list[types.Resource]:
        fetch = lambda c: collect_pages(  # noqa: E731
            lambda cur: c.sdk_client.list_resources(cursor=cur), _resources
        )
        return await self._run(spec, fetch, timeout)

    async def list_resource_templates(
        self, spec: ServerSpec, *, timeout: float | None = None
    ) -> list[types.ResourceTemplate]:
        fetch = lambda c: collect_pages(  # noqa: E731
            lambda cur: c.sdk_client.list_resource_templates(cursor=cur), _templates
        )
        return await self._run(spec, fetch, timeout)

    async def list_prompts(
        self, spec: ServerSpec, *, timeout: float | None = None
    ) -> list[types.Prompt]:
        return await self._run(
            spec,
            lambda c: collect_pages(lambda cur: c.sdk_client.list_prompts(cursor=cur), _prompts),
            timeout,
        )

    async def read_resource(
        self,
        spec: ServerSpec,
        uri: str,
        *,
        timeout: float | None = None,
        relay: Relay | None = None,
    ) -> types.ReadResourceResult:
        return await self._run(
            spec,
            lambda c: c.sdk_client.read_resource(uri),
            timeout,
            relay,
            what=f"resources/read {uri}",
        )

    async def subscribe_resource(
        self, spec: ServerSpec, uri: str, *, timeout: float | None = None
    ) -> None:
        """Ask the backend for `notifications/resources/updated` about `uri` (they reach `on_notification`).
        A restarted backend has forgotten it: subscribe again after a restart."""
        await self._run(
            spec,
            lambda c: c.sdk_client.subscribe_resource(uri),
            timeout,
            what=f"resources/subscribe {uri}",
        )

    async def get_prompt(
        self,
        spec: ServerSpec,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
        relay: Relay | None = None,
    ) -> types.GetPromptResult:
        args = dict(arguments) if arguments is not None else None
        return await self._run(
            spec,
            lambda c: c.sdk_client.get_prompt(name, args),
            timeout,
            relay,
            what=f"prompts/get {name}",
        )

    async def complete(
        self,
        spec: ServerSpec,
        ref: types.ResourceTemplateReference | types.PromptReference,
        argument: Mapping[str, str],
        context_arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> types.CompleteResult:
        ctx = dict(context_arguments) if context_arguments is not None else None
        return await self._run(
            spec, lambda c: c.sdk_client.complete(ref, dict(argument), ctx), timeout
        )

    async def ping(self, spec: ServerSpec, *, timeout: float | None = None) -> float:
        """Round-trip seconds of a ping (connecting first if needed)."""
        started = time.perf_counter()
        await self._run(spec, lambda c: c.sdk_client.session.send_ping(), timeout, what="ping")
        return time.perf_counter() - started

    async def discover(self, spec: ServerSpec, *, timeout: float | None = None) -> Discovery:
        return await self._run(
            spec, lambda c: _discover(spec, c.sdk_client), timeout, what="discovery"
        )

    async def stderr_tail(self, name: str) -> str:
        server = self._servers.get(name)
        return server.stderr.text() if server else ""

    async def close(self, name: str) -> None:
        """Close one pool key's connection; a plain server name closes its per-user ones too.

        Someone closed it (an admin, a *Test* that closes after, a server disabled): the next call
        starts afresh, with the circuit closed, instead of being refused for a past failure."""
        keys = [
            k
            for k in self._servers
            if k == name or (name == server_of(name) and server_of(k) == name)
        ]
        for key in keys:
            server = self._servers[key]
            server.breaker.reset()
            server.last_start_error = None
            if server.conn is not None:
                conn, server.conn = server.conn, None
                await conn.close()

    async def aclose(self) -> None:
        self._closed = True
        starters = [s.starter for s in self._servers.values() if s.starter is not None]
        for starter in starters:
            starter.cancel()
        await asyncio.gather(*starters, return_exceptions=True)
        if self._reaper is not None:
            self._reaper.cancel()
            await asyncio.gather(self._reaper, return_exceptions=True)
        conns = [s.conn for s in self._servers.values() if s.conn is not None] + list(self._retired)
        for server in self._servers.values():
            server.conn = None
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)

    async def stats(self) -> dict[str, Any]:
        return self.stats_now()

    async def hand_off(self, kind: str, work_id: str) -> bool:
        return False  # the connections are this process's: its own work runs here

    def stats_now(self) -> dict[str, Any]:
        conns = self._live_connections()
        return {
            "open_sessions": sum(1 for c in conns if c.usable),
            "live_processes": sum(1 for c in conns if c.child.alive),
            "starting": self._starting,
            "max_concurrent_starts": self._max_starting,
            "servers": {name: self._server_stats(s) for name, s in self._servers.items()},
        }

    # -- connections -------------------------------------------------------------------

    async def _run(
        self,
        spec: ServerSpec,
        fn: Callable[[Connection], Awaitable[T]],
        timeout: float | None,
        relay: Relay | None = None,
        *,
        what: str = "request",
        target: str = "",
    ) -> T:
        server = self._servers.get(spec.key) or self._server(spec.key)
        limit = timeout or spec.timeout or self.options.default_timeout
        what = f"{what} {target}" if target else what
        inflight = self._inflight.get(spec.name, 0)
        if inflight >= self.options.max_inflight_per_server:
            raise ServerUnavailable(
                spec.name,
                f"server {spec.name!r} is busy: {inflight} requests in flight, the limit per server "
                "(MCPHUB_MAX_INFLIGHT_PER_SERVER); retry when some have finished",
            )
        self._inflight[spec.name] = inflight + 1
        server.inflight += 1
        try:
            return await self._attempt(spec, server, fn, limit, relay, what)
        except _SessionExpired:
            # A request answered 404 for an unknown session was never executed: run it once
            # more on a new session (the MCP transport spec's recovery for a restarted server).
            return await self._attempt(spec, server, fn, limit, relay, what, retry=False)
        finally:
            server.inflight -= 1
            self._inflight[spec.name] -= 1

    async def _attempt(
        self,
        spec: ServerSpec,
        server: _Server,
        fn: Callable[[Connection], Awaitable[T]],
        limit: float,
        relay: Relay | None,
        what: str,
        *,
        retry: bool = True,
    ) -> T:
        conn = await self._connection(spec, server)
        server.calls += 1
        try:
            result = await conn.request(fn, limit, relay)
        except TimeoutError:
            conn.probe_soon(min(self.options.probe_timeout, limit))
            raise CallTimeout(
                spec.name, f"server {spec.name!r}: {what} timed out after {limit:g}s"
            ) from None
        except MCPError as exc:
            if conn.child.session_expired:
                # Every request on a session the server forgot was refused (404), none ran.
                conn.fail(
                    "the server no longer knows our session (HTTP 404): it restarted or expired it"
                )
                if retry:
                    raise _SessionExpired() from None
            if exc.code == types.CONNECTION_CLOSED:
                raise await self._crashed(server, conn, what) from None
            if conn.child.session_expired:
                raise
            server.breaker.record_success()  # a JSON-RPC error is an answer: the backend works
            raise
        except (OSError, RuntimeError) as exc:
            if conn.usable:
                raise
            raise await self._crashed(server, conn, what) from exc
        server.breaker.record_success()
        return result

    async def _crashed(self, server: _Server, conn: Connection, what: str) -> ServerCrashed:
        reason = await conn.wait_failure(timeout=1.0)
        if reason is None:
            conn.fail("connection closed")
            reason = "connection closed"
        tail = server.stderr.summary()
        message = f"server {server.name!r} crashed during {what}: {reason}" + (
            f"; stderr: {tail}" if tail else ""
        )
        return ServerCrashed(server.name, message)

    async def _connection(self, spec: ServerSpec, server: _Server) -> Connection:
        conn = server.conn
        if conn is not None and conn.usable and conn.config_hash == spec.config_hash:
            if conn.probing:
                await conn.wait_probe()
            if conn.usable:
                return conn
        return await self._connect(spec, server)

    async def _connect(self, spec: ServerSpec, server: _Server) -> Connection:
        if self._closed:
            raise ServerUnavailable(
                spec.name, f"server {spec.name!r} is unavailable: the pool is closed"
            )
        async with server.lock:
            self._replace_stale(spec, server)
            if server.conn is None and server.starter is None:
                server.breaker.check()
                server.starter = asyncio.get_running_loop().create_task(self._start(spec, server))
                server.starter.add_done_callback(server.start_finished)
            starter, previous = server.starter, server.last_start_error
        if starter is not None:
            await self._await_start(starter, previous)
        conn = server.conn
        if conn is None or not conn.usable:
            raise ServerUnavailable(
                spec.name, f"server {spec.name!r} is unavailable: its connection closed at start"
            )
        return conn

    async def _await_start(
        self, starter: asyncio.Task[Connection], previous: PoolError | None
    ) -> None:
        """Wait for the shared start; after a failed one, only briefly (it may hang again)."""
        if previous is None:
            await asyncio.shield(starter)
            return
        done, _ = await asyncio.wait({starter}, timeout=self.options.retry_wait)
        if not done:
            # Fail fast with the reason of the last failed start while the retry runs on.
            raise type(previous)(previous.server, f"{previous.message} (a new start is under way)")
        starter.result()

    def _replace_stale(self, spec: ServerSpec, server: _Server) -> None:
        if server.config_hash != spec.config_hash:
            server.config_hash = spec.config_hash
            server.breaker.reset()  # a new config deserves a fresh chance, even with the circuit open
            server.last_start_error = None
        conn = server.conn
        if conn is None:
            return
        if conn.config_hash != spec.config_hash:
            # Hot reload: the old connection finishes its calls; new ones go to a new backend.
            server.conn = None
            self._retired.add(conn)
            conn.retire()
            asyncio.get_running_loop().call_later(self.options.drain_timeout, self._abandon, conn)
        elif not conn.usable and not conn.starting:
            server.conn = None

    def _abandon(self, conn: Connection) -> None:
        if not conn.closed:
            conn.fail(f"did not drain within {self.options.drain_timeout:g}s after a config change")

    async def _start(self, spec: ServerSpec, server: _Server) -> Connection:
        """One start shared by every caller; a task of its own, so no caller's cancellation ends it."""
        await asyncio.sleep(server.breaker.start_delay())
        await self._make_room()
        if spec.partition:
            await self._make_partition_room(spec)
        self._ensure_reaper()
        async with self._start_gate:
            self._count_start(+1)
            try:
                conn = server.conn = self._new_connection(spec, server)
                server.starts += 1
                conn.launch()
                await _quietly(conn.wait_ready())
            finally:
                self._count_start(-1)
        if (error := conn.start_error()) is not None:
            if server.conn is conn:
                server.conn = None
            server.last_start_error = error if isinstance(error, PoolError) else None
            raise error
        server.last_start_error = None
        return conn

    def _new_connection(self, spec: ServerSpec, server: _Server) -> Connection:
        return Connection(
            spec,
            listener=_ServerListener(self, server),
            stderr=server.stderr,
            connect_timeout=self.options.connect_timeout,
            grace=self.options.shutdown_grace,
            relay_methods=self.options.relay,
            lean_requests=self.options.lean_requests,
            on_notification=self.on_notification,
        )

    def _count_start(self, delta: int) -> None:
        self._starting += delta
        self._max_starting = max(self._max_starting, self._starting)

    async def _make_room(self) -> None:
        live = [s.conn for s in self._servers.values() if s.conn is not None]
        if len(live) < self.options.max_sessions:
            return
        idle = sorted(
            (c for c in live if c.inflight == 0 and not c.starting), key=lambda c: c.last_used
        )
        if not idle:
            raise ServerUnavailable(
                "", f"pool is full ({self.options.max_sessions} sessions, all busy)"
            )
        await self._close_connection(idle[0])

    async def _make_partition_room(self, spec: ServerSpec) -> None:
        """Per-user connections of one server are capped too: the least recently used idle one goes."""
        live = [
            s.conn
            for key, s in self._servers.items()
            if s.conn is not None
            and key != spec.key
            and server_of(key) == spec.name
            and s.conn.spec.partition
        ]
        if len(live) < self.options.max_partitions_per_server:
            return
        idle = sorted(
            (c for c in live if c.inflight == 0 and not c.starting), key=lambda c: c.last_used
        )
        if not idle:
            raise ServerUnavailable(
                spec.name,
                f"server {spec.name!r} has {len(live)} per-user connections open, all busy (the limit per "
                "server, MCPHUB_POOL max_partitions_per_server); retry when some have finished",
            )
        await self._close_connection(idle[0])

    async def _close_connection(self, conn: Connection) -> None:
        server = self._servers.get(conn.spec.key)
        if server is not None and server.conn is conn:
            server.conn = None
        await conn.close()

    # -- housekeeping ------------------------------------------------------------------

    def _server(self, name: str) -> _Server:
        server = self._servers.get(name)
        if server is None:
            server = self._servers[name] = _Server(name, self.options)
        return server

    def _ensure_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.get_running_loop().create_task(
                self._reap_idle(), name="mcp-pool-reaper"
            )

    async def _reap_idle(self) -> None:
        interval = max(0.05, min(self.options.idle_timeout / 2, 30.0))
        while True:
            await asyncio.sleep(interval)
            deadline = time.monotonic() - self.options.idle_timeout
            idle = [s.conn for s in self._servers.values() if _is_idle(s.conn, deadline)]
            await asyncio.gather(
                *(self._close_connection(c) for c in idle if c is not None), return_exceptions=True
            )
            self._forget_idle_partitions()

    def _forget_idle_partitions(self) -> None:
        # One entry per user who ever called a shared server would pile up: drop the quiet ones.
        for key, server in list(self._servers.items()):
            quiet = (
                time.monotonic() - server.last_failure_at > self.options.idle_timeout
            )  # keep a failing one's backoff
            if (
                key != server.name
                and server.conn is None
                and server.starter is None
                and server.inflight == 0
                and quiet
            ):
                del self._servers[key]

    def _live_connections(self) -> list[Connection]:
        current = [s.conn for s in self._servers.values() if s.conn is not None]
        return current + [c for c in self._retired if c not in current]

    def _server_stats(self, server: _Server) -> dict[str, Any]:
        conn = server.conn
        return {
            "state": _state(conn),
            "pid": conn.child.pid if conn is not None and conn.child.alive else None,
            "config_hash": conn.config_hash if conn is not None else None,
            "inflight": conn.inflight if conn is not None else 0,
            "calls": server.calls,
            "starts": server.starts,
            "restarts": server.restarts,
            "failures": server.failures,
            "circuit": server.breaker.state,
            "last_error": server.breaker.last_error or None,
        }


class _SessionExpired(Exception):
    """The backend forgot the connection's session: the request did not run; retry it once."""


class _ServerListener:
    """Connects one connection's lifecycle events back to its pool and server entry."""

    def __init__(self, pool: Pool, server: _Server) -> None:
        self.pool = pool
        self.server = server

    def connection_failed(self, conn: Connection, reason: str) -> None:
        self.server.failures += 1
        self.server.last_failure_at = time.monotonic()
        # A failed start counts from when it began: one that hung for its whole timeout was
        # already a long wait, and the next try may follow at once.
        failed_start = conn.starting or conn.start_error() is not None
        # A server that stays down fails the same way at every retry and health check: say it once
        # (until it works again or fails differently); its stderr tail keeps every occurrence.
        repeated = self.server.breaker.failures > 0 and reason == self.server.breaker.last_error
        self.server.breaker.record_failure(reason, began=conn.launched_at if failed_start else None)
        self.server.stderr.append(f"{MARKER} connection to {self.server.name!r} failed: {reason}")
        logger.log(
            logging.DEBUG if repeated else logging.WARNING,
            "server %r failed: %s",
            self.server.name,
            reason,
        )

    def connection_closed(self, conn: Connection) -> None:
        self.pool._retired.discard(conn)
        if self.server.conn is conn and not conn.starting:
            self.server.conn = None


def _is_idle(conn: Connection | None, deadline: float) -> bool:
    return conn is not None and conn.usable and conn.inflight == 0 and conn.last_used < deadline


def _state(conn: Connection | None) -> str:
    if conn is None:
        return "closed"
    if conn.starting:
        return "starting"
    return "open" if conn.usable else "closing"


async def _quietly(awaitable: Awaitable[Any]) -> None:
    try:
        await awaitable
    except Exception:
        pass  # the connection recorded why; the caller reads conn.failure


def _meta(meta: Mapping[str, Any] | None) -> Any:
    return dict(meta) if meta is not None else None


def _tools(page: types.ListToolsResult) -> list[types.Tool]:
    return page.tools


def _resources(page: types.ListResourcesResult) -> list[types.Resource]:
    return page.resources


def _templates(page: types.ListResourceTemplatesResult) -> list[types.ResourceTemplate]:
    return page.resource_templates


def _prompts(page: types.ListPromptsResult) -> list[types.Prompt]:
    return page.prompts


async def _discover(spec: ServerSpec, client: Client) -> Discovery:
    caps = client.session.server_capabilities
    found = Discovery(
        server=spec.name,
        config_hash=spec.config_hash,
        protocol_version=client.session.protocol_version,
        server_info=client.session.server_info,
        capabilities=caps,
        instructions=client.session.instructions,
    )
    if caps is None or caps.tools is not None:
        found.tools = await _optional(lambda cur: client.list_tools(cursor=cur), _tools)
    if caps is None or caps.resources is not None:
        found.resources = await _optional(lambda cur: client.list_resources(cursor=cur), _resources)
        found.resource_templates = await _optional(
            lambda cur: client.list_resource_templates(cursor=cur), _templates
        )
    if caps is None or caps.prompts is not None:
        found.prompts = await _optional(lambda cur: client.list_prompts(cursor=cur), _prompts)
    return found


async def _optional(
    fetch: Callable[[str | None], Awaitable[Any]], items: Callable[[Any], list[T]]
) -> list[T]:
    """A list the server advertises but does not implement (common for templates) is empty."""
    try:
        return await collect_pages(fetch, items)
    except MCPError as exc:
        if exc.code == types.METHOD_NOT_FOUND:
            return []
        raise
