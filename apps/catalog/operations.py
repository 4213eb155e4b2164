"""Operations on a server's live backend: discover now, test connection, health, stderr, counters.

Synchronous, keyword-only calls for the admin, the REST API and Celery tasks (one line each).
They reach the pool this process should use (`run_on_pool`):

- production (REDIS_URL set): a short-lived `RemotePool`, which routes to the pool worker that
  holds the server's connection, so stderr and counters are the live ones;
- embedded, inside the web process (a sync view under the ASGI server): the web process's own pool, on
  its event loop, the same one the gateway's tool calls use;
- embedded anywhere else (a management command, a test client): a short-lived in-process pool,
  closed afterwards; it starts the backend for the operation and stops it again.

Health, honestly (`check_health`):
- `down`: the ping failed, timed out, or the pool refuses the server (circuit open);
- `degraded`: the ping answered, but slower than MCPHUB_HEALTH_SLOW_MS (the second of two pings
  is timed: the first may pay for starting the backend), or the pool saw the
  server's connection fail (crash, hang, failed start) since the previous check;
- `healthy`: the ping answered in time and nothing failed since the previous check.
A tool call that fails with a crash or hang therefore shows up as `degraded` at the next check
at the latest; a JSON-RPC error or an `isError` result is an answer, not a failure.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from asgiref.sync import SyncToAsync, async_to_sync
from django.conf import settings
from django.core.cache import cache
from django.utils import timezone
from django.utils.module_loading import import_string

from apps.catalog.introspection import (
    DiscoveryReport,
    ServerGone,
    _describe,
    apply_discovery,
    record_failure,
    record_health,
)
from apps.catalog.models import McpServer
from apps.catalog.openapi_sync import refresh_documents
from apps.connections.errors import PoolError
from apps.connections.specs import ServerSpec, server_of

T = TypeVar("T")

FAILURES_KEY = "mcphub:catalog:health-failures:{name}"


# --- Results ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiscoveryOutcome:
    server: str
    report: DiscoveryReport | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.report is not None

    def __str__(self) -> str:
        return (
            str(self.report)
            if self.report is not None
            else f"{self.server}: discovery failed: {self.error}"
        )


@dataclass(frozen=True)
class HealthVerdict:
    server: str
    status: str  # an McpServer.Status value
    round_trip_ms: float | None = None
    reason: str = ""  # why degraded or down (or not checked); empty when healthy
    skipped: bool = (
        False  # nothing was pinged (no user's values to connect with): `status` is the stored one
    )

    @property
    def ok(self) -> bool:
        return self.status != McpServer.Status.DOWN

    def __str__(self) -> str:
        rtt = f" ({self.round_trip_ms:.1f} ms)" if self.round_trip_ms is not None else ""
        if self.skipped:
            return f"{self.server}: not checked: {self.reason}"
        return f"{self.server}: {self.status}{rtt}" + (f": {self.reason}" if self.reason else "")


@dataclass(frozen=True)
class ServerPoolStats:
    """One server's counters, summed over the pool workers that hold (or held) it."""

    server: str
    state: str = "closed"  # open, starting, closing or closed
    open_sessions: int = 0
    live_processes: int = 0
    inflight: int = 0
    calls: int = 0
    restarts: int = 0
    failures: int = 0
    circuit: str = "closed"
    last_error: str = ""
    workers: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


# --- Whose values ---------------------------------------------------------------------------

# How discovery and health checks get a server's spec. A server with `${user:NAME}` variables, or
# one requiring OAuth, has no spec of its own: the values (or sign-in) of the staff user running the
# operation are used, else the server owner's, else it raises a PoolError saying whose are missing
# (the operation is then skipped with that reason). Those values live in apps.credentials, above
# the catalog, so the project's settings name the function (MCPHUB_OPERATIONAL_SPEC, wired in
# mcphub/settings.py as AUTHENTICATION_BACKENDS is).
SpecResolver = Callable[[McpServer, Any], ServerSpec]


def operational_spec(server: McpServer, user: Any = None) -> ServerSpec:
    """The spec discovery and health checks use, as `user` (None: a background task)."""
    if server.transport == McpServer.Transport.OPENAPI:
        # Its tools come from its document and its health from the hub itself: no request reaches
        # the API, so nobody's credentials are needed (users' calls get theirs as always).
        return server.to_spec()
    resolver: SpecResolver = import_string(settings.MCPHUB_OPERATIONAL_SPEC)
    return resolver(server, user)


def _resolve(server: McpServer, user: Any) -> ServerSpec | PoolError:
    try:
        return operational_spec(server, user)
    except PoolError as exc:
        return exc


def record_waiting(*, server: McpServer, reason: str) -> None:
    """Nothing could be checked (no values to connect with): say why, without calling it down."""
    fields = {"last_error": reason[:4000], "last_checked_at": timezone.now()}
    if server.last_ok_at is None:
        fields["status"] = McpServer.Status.UNKNOWN
    McpServer.objects.filter(pk=server.pk).update(**fields)
    for name, value in fields.items():
        setattr(server, name, value)


# --- Reaching the pool -----------------------------------------------------------------------


def run_on_pool(fn: Callable[[Any], Awaitable[T]]) -> T:
    """Run `fn(pool)` on the pool this process should use (see the module docstring)."""
    from apps.connections.default import run_with_pool

    if _web_event_loop() is not None:
        return async_to_sync(_on_shared_pool)(fn)
    return run_with_pool(fn)


async def _on_shared_pool(fn: Callable[[Any], Awaitable[T]]) -> T:
    from apps.connections.default import get_pool

    return await fn(get_pool())


def _web_event_loop() -> asyncio.AbstractEventLoop | None:
    # asgiref records the server's loop on the threads it runs sync views in; async_to_sync then
    # runs coroutines on that loop, where the embedded web process keeps its pool.
    if settings.REDIS_URL:
        return None
    loop = getattr(SyncToAsync.threadlocal, "main_event_loop", None)
    same_process = getattr(SyncToAsync.threadlocal, "main_event_loop_pid", None) == os.getpid()
    return loop if loop is not None and same_process and loop.is_running() else None


# --- Discovery -------------------------------------------------------------------------------


def discover_now(*, server: McpServer, user: Any = None) -> DiscoveryOutcome:
    """Connect, list everything, persist it; a failure is recorded as `down`, not raised.

    Works on a disabled server too (an admin checking it before enabling it); its connection
    is closed again afterwards.
    """
    return discover_many(servers=[server], user=user)[0]


def discover_many(*, servers: Sequence[McpServer], user: Any = None) -> list[DiscoveryOutcome]:
    """`discover_now` for several servers at once: they start and answer concurrently.

    A server with user variables is discovered with `user`'s values (see `operational_spec`).
    An OpenAPI server fetched from a URL reads its document again first (openapi_sync.py).
    """
    refresh_documents(servers)
    specs = [_resolve(server, user) for server in servers]
    plans = [
        (spec, server.enabled)
        for spec, server in zip(specs, servers)
        if isinstance(spec, ServerSpec)
    ]

    async def discover_all(pool: Any) -> list[Any]:
        return await asyncio.gather(
            *(_discover(pool, spec, keep=keep) for spec, keep in plans), return_exceptions=True
        )

    try:
        results = iter(run_on_pool(discover_all) if plans else [])
    except Exception as exc:  # boundary: no pool to ask is every server's verdict
        results = iter([exc] * len(plans))
    return [
        _outcome(server, next(results) if isinstance(spec, ServerSpec) else _Waiting(spec))
        for server, spec in zip(servers, specs)
    ]


@dataclass(frozen=True)
class _Waiting:
    reason: PoolError


def _outcome(server: McpServer, result: Any) -> DiscoveryOutcome:
    if isinstance(result, _Waiting):
        record_waiting(server=server, reason=result.reason.message)
        return DiscoveryOutcome(server.name, error=result.reason.message)
    if isinstance(result, BaseException):  # any backend failure is this server's verdict
        error = record_failure(server=server, error=_describe(result))
        return DiscoveryOutcome(server.name, error=error)
    try:
        return DiscoveryOutcome(
            server.name, report=apply_discovery(server=server, discovery=result)
        )
    except (
        ServerGone
    ) as gone:  # deleted meanwhile (an admin, a test's cleanup): not a failure to record
        return DiscoveryOutcome(server.name, error=str(gone))


async def _discover(pool: Any, spec: ServerSpec, *, keep: bool) -> Any:
    try:
        return await pool.discover(spec, timeout=_discovery_timeout(spec))
    finally:
        if not keep:
            await pool.close(spec.key)


def _discovery_timeout(spec: ServerSpec) -> float:
    return max(spec.timeout or 0.0, float(settings.MCPHUB_HEALTH_TIMEOUT))


# --- Health ----------------------------------------------------------------------------------


def check_health(*, server: McpServer, user: Any = None) -> HealthVerdict:
    """Ping the server through the pool (with MCPHUB_HEALTH_TIMEOUT) and record the verdict.

    Also the admin's "Test connection": on a disabled server the connection is closed after.
    A server with user variables is pinged with `user`'s values (see `operational_spec`); with
    none to use, nothing is pinged and the verdict keeps the server's status, giving the reason.
    """
    spec = _resolve(server, user)
    if isinstance(spec, PoolError):
        record_waiting(server=server, reason=spec.message)
        return HealthVerdict(server.name, server.status, reason=spec.message, skipped=True)
    outcome, stats = run_on_pool(lambda pool: _probe(pool, spec, keep=server.enabled))
    verdict = _judge(spec, outcome, stats)
    record_health(
        server=server,
        ok=verdict.status != McpServer.Status.DOWN,
        error=verdict.reason,
        degraded=verdict.status == McpServer.Status.DEGRADED,
    )
    return verdict


def test_draft(*, server: McpServer, user: Any = None) -> HealthVerdict:
    """Ping a server's configuration before it is saved (the Servers page's *Test*): nothing is
    recorded, and the connection is closed after. It runs under a name of its own, so the saved
    server's live connection is left alone."""
    spec = _resolve(server, user)
    if isinstance(spec, PoolError):
        return HealthVerdict(
            server.name, McpServer.Status.UNKNOWN, reason=spec.message, skipped=True
        )
    draft = dataclasses.replace(spec, name=f"{spec.name}~draft")
    outcome, stats = run_on_pool(lambda pool: _probe(pool, draft, keep=False))
    return dataclasses.replace(_judge(draft, outcome, stats), server=server.name)


async def _probe(
    pool: Any, spec: ServerSpec, *, keep: bool
) -> tuple[float | BaseException, ServerPoolStats]:
    timeout = float(settings.MCPHUB_HEALTH_TIMEOUT)
    try:
        await pool.ping(
            spec, timeout=timeout
        )  # may pay for starting the backend: not the round trip
        outcome: float | BaseException = await pool.ping(spec, timeout=timeout)
    except Exception as exc:  # boundary: the failure is the verdict
        outcome = exc
    stats = await _server_stats(pool, spec.name)
    if not keep:
        await pool.close(spec.key)
    return outcome, stats


def _judge(
    spec: ServerSpec, outcome: float | BaseException, stats: ServerPoolStats
) -> HealthVerdict:
    name = spec.name
    new_failures = _failures_since_last_check(spec, stats.failures)
    if isinstance(outcome, BaseException):
        return HealthVerdict(name, McpServer.Status.DOWN, reason=_describe(outcome))
    rtt = outcome * 1000
    if rtt > settings.MCPHUB_HEALTH_SLOW_MS:
        reason = f"ping took {rtt:.0f} ms (slower than {settings.MCPHUB_HEALTH_SLOW_MS} ms)"
        return HealthVerdict(name, McpServer.Status.DEGRADED, rtt, reason)
    if new_failures:
        detail = f": {stats.last_error}" if stats.last_error else ""
        reason = f"{new_failures} connection failure(s) since the previous check{detail}"
        return HealthVerdict(name, McpServer.Status.DEGRADED, rtt, reason)
    return HealthVerdict(name, McpServer.Status.HEALTHY, rtt)


def _failures_since_last_check(spec: ServerSpec, failures: int) -> int:
    # Failures under an older config do not count against a new one (the pool resets its breaker too).
    key = FAILURES_KEY.format(name=spec.name)
    previous_hash, previous = cache.get(key) or (None, None)
    cache.set(key, (spec.config_hash, failures), timeout=None)
    if previous is None or previous_hash != spec.config_hash:
        return 0
    return failures if failures < previous else failures - previous  # fewer: a worker restarted


# --- Live state: stderr, counters, closing ---------------------------------------------------


@dataclass(frozen=True)
class LiveState:
    """What the pool knows of a server right now; `error` if the pool could not be asked."""

    stderr: str
    stats: ServerPoolStats
    error: str = ""


def live_state(*, server_name: str) -> LiveState:
    """The backend's recent stderr and its pool counters, in one trip; never starts a backend."""
    try:
        return run_on_pool(lambda pool: _live_state(pool, server_name))
    except Exception as exc:  # boundary: a page showing this must render without a worker too
        return LiveState("", ServerPoolStats(server_name), error=_describe(exc))


async def _live_state(pool: Any, name: str) -> LiveState:
    return LiveState(await pool.stderr_tail(name), await _server_stats(pool, name))


@dataclass(frozen=True)
class PoolOverview:
    """The pool workers that answered, and every server they hold or held (counters summed)."""

    workers: int
    servers: list[ServerPoolStats]


def pool_overview() -> PoolOverview:
    return run_on_pool(_pool_overview)


async def _pool_overview(pool: Any) -> PoolOverview:
    per_worker = await _stats_per_worker(pool)
    names = sorted(
        {server_of(key) for stats in per_worker.values() for key in stats.get("servers", {})}
    )
    answered = sum(1 for stats in per_worker.values() if "error" not in stats)
    return PoolOverview(answered, [_stats_of(per_worker, name) for name in names])


def stderr_tail(*, server_name: str) -> str:
    """The backend's recent stderr as the pool captured it ('' if it never ran here)."""
    return run_on_pool(lambda pool: pool.stderr_tail(server_name))


def pool_stats(*, server_name: str) -> ServerPoolStats:
    """Open sessions, live processes, restarts, failures and more for one server."""
    return run_on_pool(lambda pool: _server_stats(pool, server_name))


def close_connection(*, server_name: str) -> None:
    """Close the server's backend connection (stdio children are stopped); the next call reopens."""
    run_on_pool(lambda pool: pool.close(server_name))


def close_disabled(*, server_names: Iterable[str]) -> list[str]:
    """Close the connections these (disabled) servers still hold; returns the names closed."""
    names = set(server_names)

    async def close(pool: Any) -> list[str]:
        held = sorted(names & await _held_servers(pool))
        for name in held:
            await pool.close(name)
        return held

    return run_on_pool(close) if names else []


async def _stats_per_worker(pool: Any) -> dict[str, dict[str, Any]]:
    from apps.connections.pool import Pool

    stats = await pool.stats()
    return {"in-process": stats} if isinstance(pool, Pool) else stats


async def _held_servers(pool: Any) -> set[str]:
    return {
        server_of(name)
        for stats in (await _stats_per_worker(pool)).values()
        for name, entry in stats.get("servers", {}).items()
        if entry["state"] != "closed"
    }


async def _server_stats(pool: Any, name: str) -> ServerPoolStats:
    return _stats_of(await _stats_per_worker(pool), name)


def _stats_of(per_worker: dict[str, dict[str, Any]], name: str) -> ServerPoolStats:
    """A server's counters with its per-user connections (pool keys `name#partition`) summed in."""
    found = [
        (worker, entry)
        for worker, stats in per_worker.items()
        for key, entry in stats.get("servers", {}).items()
        if server_of(key) == name
    ]
    return _sum_stats(name, found)


def _sum_stats(name: str, found: list[tuple[str, dict[str, Any]]]) -> ServerPoolStats:
    if not found:
        return ServerPoolStats(name)
    entries = [entry for _, entry in found]
    states = [e["state"] for e in entries]
    circuits = [e["circuit"] for e in entries if e["circuit"] != "closed"]
    return ServerPoolStats(
        server=name,
        state=next((s for s in ("open", "starting", "closing") if s in states), "closed"),
        open_sessions=states.count("open"),
        live_processes=sum(1 for e in entries if e.get("pid")),
        inflight=sum(e["inflight"] for e in entries),
        calls=sum(e["calls"] for e in entries),
        restarts=sum(e["restarts"] for e in entries),
        failures=sum(e["failures"] for e in entries),
        circuit=circuits[0] if circuits else "closed",
        last_error=next((e["last_error"] for e in entries if e.get("last_error")), ""),
        workers=tuple(sorted({worker for worker, _ in found})),
    )
