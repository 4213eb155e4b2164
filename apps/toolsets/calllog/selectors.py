"""Permission-scoped reads of the tool-call log: usage per tool and per server, over time; and
the tokens spent answering gateway calls' sampling with the users' own models.

Counts come from one grouped query (exact at any volume). Percentiles are computed in Python
from the durations, the same way on SQLite and Postgres (linear interpolation, as Postgres's
`percentile_cont`). Durations are read in one streamed pass; beyond `MAX_DURATIONS` calls in
the window only every n-th call (by id, so spread evenly over time) is read, and the result
says it was sampled.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.db.models import Case, Count, F, IntegerField, Q, QuerySet, Sum, Value, When
from django.db.models.functions import Mod
from django.utils import timezone

from apps.toolsets.models import Endpoint, SamplingUsage, ToolCall

MAX_DURATIONS = 50_000


@dataclass(frozen=True)
class Window:
    """A span of recent time and the bucket its chart uses."""

    key: str
    label: str
    span: timedelta
    bucket: str  # "hour" or "day"


WINDOWS = {
    "24h": Window("24h", "Last 24 hours", timedelta(hours=24), "hour"),
    "7d": Window("7d", "Last 7 days", timedelta(days=7), "day"),
    "30d": Window("30d", "Last 30 days", timedelta(days=30), "day"),
}
BUCKETS = {"hour": timedelta(hours=1), "day": timedelta(days=1)}


@dataclass(frozen=True)
class UsageFilter:
    """What to count: a window, optionally narrowed to a server, a tool, an endpoint or (staff) a user."""

    window: str = "24h"
    bucket: str | None = None  # None: the window's own bucket
    server: str = ""
    tool: str = ""
    endpoint: str = ""
    user: str = ""  # a username; only staff may name someone else


@dataclass
class Stats:
    """Calls, errors and duration percentiles of one group of calls."""

    calls: int = 0
    errors: int = 0
    p50_ms: float | None = None
    p95_ms: float | None = None

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0


@dataclass
class ServerUsage(Stats):
    server: str = ""
    series: list[int] = field(default_factory=list)  # calls per bucket, aligned with Usage.buckets


@dataclass
class ToolUsage(ServerUsage):
    tool: str = ""


@dataclass
class Bucket(Stats):
    start: datetime | None = None


@dataclass
class SamplingRow:
    """Tokens spent answering gateway sampling, for one user, endpoint, server and model."""

    user: str
    endpoint: str
    server: str
    model: str
    requests: int
    input_tokens: int
    output_tokens: int


@dataclass
class SamplingTotals:
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    rows: list[SamplingRow] = field(default_factory=list)


@dataclass
class Usage:
    window: Window
    bucket: str
    since: datetime
    until: datetime
    totals: Stats
    buckets: list[Bucket]
    servers: list[ServerUsage]
    tools: list[ToolUsage]
    sampled: bool  # percentiles came from a sample of the calls
    # Gateway calls' sampling answered by the users' own models (not narrowed by tool).
    sampling: SamplingTotals = field(default_factory=SamplingTotals)


class UsageForbidden(PermissionError):
    pass


def sees_every_call(user) -> bool:
    """Everyone's usage is for those who may view the call log in the admin, not for staff as such."""
    return user.is_authenticated and user.has_perm("toolsets.view_toolcall")


def visible_calls(user, *, username: str = "") -> QuerySet[ToolCall]:
    """Calls on `user`'s own endpoints (and, for a deleted endpoint, calls they made); staff see all."""
    if sees_every_call(user):
        calls = ToolCall.objects.all()
        return calls.filter(user__username=username) if username else calls
    if username and username != user.get_username():
        raise UsageForbidden("Only staff may see other users' usage.")
    # A subquery of ids, not a join: the database filters the log by column values alone.
    own = Endpoint.objects.filter(owner=user).values("id")
    return ToolCall.objects.filter(Q(endpoint_id__in=own) | Q(endpoint__isnull=True, user=user))


def percentile(ordered: list[float], q: float) -> float | None:
    """The q-quantile of sorted values by linear interpolation (Postgres `percentile_cont`)."""
    if not ordered:
        return None
    position = (len(ordered) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def bucket_starts(since: datetime, until: datetime, bucket: str) -> list[datetime]:
    """Every bucket start from `since` to `until` in the current time zone (DST-safe: stepped in UTC)."""
    trunc = _truncate_hour if bucket == "hour" else _truncate_day
    starts: dict[datetime, None] = {}
    moment = since
    while moment <= until:
        starts[trunc(timezone.localtime(moment))] = None
        moment += timedelta(hours=1)
    starts[trunc(timezone.localtime(until))] = None
    return list(starts)


def _truncate_hour(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def _truncate_day(moment: datetime) -> datetime:
    return timezone.make_aware(datetime(moment.year, moment.month, moment.day))


def usage(user, selection: UsageFilter, *, now: datetime | None = None) -> Usage:
    """Usage of the calls `user` may see in the selected window; raises UsageForbidden, KeyError."""
    window = WINDOWS[selection.window]
    bucket = selection.bucket or window.bucket
    until = now or timezone.now()
    starts = bucket_starts(until - window.span + BUCKETS[bucket], until, bucket)
    calls = _narrow(visible_calls(user, username=selection.user), selection).filter(
        started_at__gte=starts[0], started_at__lte=until
    )
    calls = calls.annotate(slot=_slot(starts)).order_by()
    counts = calls.values("slot", "server_name", "tool_name").annotate(
        calls=Count("id"), errors=Count("id", filter=Q(ok=False))
    )
    total = sum(row["calls"] for row in counts)
    durations, sampled = _durations(calls, total)
    result = _assemble(window, bucket, starts, until, counts, durations, sampled)
    result.sampling = sampling_usage(user, selection, since=starts[0], until=until)
    return result


def visible_sampling(user, *, username: str = "") -> QuerySet[SamplingUsage]:
    """Gateway sampling on `user`'s own endpoints (and, for a deleted one, theirs); as the call log:
    those who may view it see everyone's."""
    if sees_every_call(user):
        rows = SamplingUsage.objects.all()
        return rows.filter(user__username=username) if username else rows
    if username and username != user.get_username():
        raise UsageForbidden("Only staff may see other users' usage.")
    own = Endpoint.objects.filter(owner=user).values("id")
    return SamplingUsage.objects.filter(
        Q(endpoint_id__in=own) | Q(endpoint__isnull=True, user=user)
    )


def sampling_usage(
    user, selection: UsageFilter, *, since: datetime, until: datetime
) -> SamplingTotals:
    """Tokens spent answering gateway sampling in the window, per user, endpoint, server, model."""
    rows = visible_sampling(user, username=selection.user).filter(
        created_at__gte=since, created_at__lte=until
    )
    if selection.server:
        rows = rows.filter(server_name=selection.server)
    if selection.endpoint:
        rows = rows.filter(endpoint__slug=selection.endpoint)
    grouped = (
        rows.order_by()
        .values("user__username", "endpoint__slug", "server_name", "model")
        .annotate(
            requests=Count("id"),
            input_tokens=Sum("input_tokens"),
            output_tokens=Sum("output_tokens"),
        )
    )
    totals = SamplingTotals()
    for row in grouped:
        item = SamplingRow(
            user=row["user__username"] or "",
            endpoint=row["endpoint__slug"] or "",
            server=row["server_name"],
            model=row["model"],
            requests=row["requests"],
            input_tokens=row["input_tokens"] or 0,
            output_tokens=row["output_tokens"] or 0,
        )
        totals.rows.append(item)
        totals.requests += item.requests
        totals.input_tokens += item.input_tokens
        totals.output_tokens += item.output_tokens
    totals.rows.sort(
        key=lambda r: (-(r.input_tokens + r.output_tokens), r.user, r.endpoint, r.server, r.model)
    )
    return totals


def _slot(starts: list[datetime], first: int = 0) -> Case | Value:
    """The bucket index of `started_at`, by comparisons the database runs natively.

    Truncating dates in SQL would run a Python function per row on SQLite (seconds for 100k
    calls) and may treat an ambiguous DST hour differently from Python; comparing against
    the bucket starts computed here is fast everywhere and agrees with them by construction.
    The CASE is a binary search, so each row costs ~log2(buckets) comparisons, not one per bucket.
    """
    if len(starts) == 1:
        return Value(first)
    middle = len(starts) // 2
    return Case(
        When(started_at__lt=starts[middle], then=_slot(starts[:middle], first)),
        default=_slot(starts[middle:], first + middle),
        output_field=IntegerField(),
    )


def _narrow(calls: QuerySet[ToolCall], selection: UsageFilter) -> QuerySet[ToolCall]:
    if selection.server:
        calls = calls.filter(server_name=selection.server)
    if selection.tool:
        calls = calls.filter(tool_name=selection.tool)
    if selection.endpoint:
        calls = calls.filter(endpoint__slug=selection.endpoint)
    return calls


def _durations(calls: QuerySet[ToolCall], total: int) -> tuple[Iterable[tuple], bool]:
    step = math.ceil(total / MAX_DURATIONS) if total > MAX_DURATIONS else 1
    if step > 1:
        calls = calls.annotate(sample=Mod(F("id"), step)).filter(sample=0)
    rows = calls.values_list("slot", "server_name", "tool_name", "duration_ms")
    return rows.iterator(chunk_size=5000), step > 1


def _assemble(
    window: Window,
    bucket: str,
    starts: list[datetime],
    until: datetime,
    counts,
    durations,
    sampled: bool,
) -> Usage:
    totals, buckets = Stats(), [Bucket(start=start) for start in starts]
    servers: dict[str, ServerUsage] = {}
    tools: dict[tuple[str, str], ToolUsage] = {}
    for row in counts:
        name, slot = row["server_name"], row["slot"]
        server = servers.setdefault(name, ServerUsage(server=name, series=[0] * len(starts)))
        tool = tools.setdefault(
            (name, row["tool_name"]),
            ToolUsage(server=name, tool=row["tool_name"], series=[0] * len(starts)),
        )
        for stats in (totals, buckets[slot], server, tool):
            stats.calls += row["calls"]
            stats.errors += row["errors"]
        server.series[slot] += row["calls"]
        tool.series[slot] += row["calls"]
    _fill_percentiles(durations, totals=totals, buckets=buckets, servers=servers, tools=tools)
    return Usage(
        window=window,
        bucket=bucket,
        since=starts[0],
        until=until,
        totals=totals,
        buckets=buckets,
        servers=sorted(servers.values(), key=lambda s: (-s.calls, s.server)),
        tools=sorted(tools.values(), key=lambda t: (-t.calls, t.server, t.tool)),
        sampled=sampled,
    )


def _fill_percentiles(
    durations,
    *,
    totals: Stats,
    buckets: list[Bucket],
    servers: dict[str, ServerUsage],
    tools: dict[tuple[str, str], ToolUsage],
) -> None:
    samples: dict[int, list[float]] = defaultdict(list)
    for slot, server, tool, duration in durations:
        if (server, tool) not in tools:
            continue  # written between the two queries: it is not in the counts either
        for stats in (totals, buckets[slot], servers[server], tools[server, tool]):
            samples[id(stats)].append(duration)
    for stats in (totals, *buckets, *servers.values(), *tools.values()):
        ordered = sorted(samples.get(id(stats), ()))
        stats.p50_ms, stats.p95_ms = percentile(ordered, 0.5), percentile(ordered, 0.95)


def usage_users(user) -> QuerySet:
    """The users staff may pick on the usage page: those with calls in the log (nobody for others)."""
    users = get_user_model().objects.order_by("username")
    if not sees_every_call(user):
        return users.none()
    return users.filter(pk__in=ToolCall.objects.values("user_id"))
