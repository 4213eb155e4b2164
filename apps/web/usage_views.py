"""The Usage page: calls, error rate and p50/p95 durations per server and per tool, charted over time."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from apps.toolsets.calllog import selectors
from apps.toolsets.calllog.selectors import WINDOWS, Bucket, Usage, UsageFilter
from apps.toolsets.selectors import visible_endpoints
from apps.web import charts
from apps.web.forms import UsageForm
from apps.web.templatetags.usage import duration

MAX_TOOL_ROWS = 100


def _label(start, bucket: str) -> str:
    start = timezone.localtime(start)
    return start.strftime("%H:00") if bucket == "hour" else f"{start.strftime('%b')} {start.day}"


def _title(b: Bucket, bucket: str) -> str:
    start = timezone.localtime(b.start)
    when = start.strftime("%b %d, %H:00") if bucket == "hour" else start.strftime("%a %b %d")
    if not b.calls:
        return f"{when}: no calls"
    return (
        f"{when}: {b.calls} call{'s' if b.calls != 1 else ''}, {b.errors} error{'s' if b.errors != 1 else ''}"
        f", p50 {duration(b.p50_ms)}, p95 {duration(b.p95_ms)}"
    )


def _axis_duration(ms: float) -> str:
    """Compact, for the narrow axis: 0, 250ms, 1.5s."""
    if not ms:
        return "0"
    return f"{ms:g}ms" if ms < 1000 else f"{ms / 1000:g}s"


def _charts(result: Usage) -> dict[str, charts.Chart]:
    labels = [_label(b.start, result.bucket) for b in result.buckets]
    titles = [_title(b, result.bucket) for b in result.buckets]
    calls = charts.bar_chart(
        labels,
        [b.calls - b.errors for b in result.buckets],
        [b.errors for b in result.buckets],
        titles,
    )
    durations = charts.line_chart(
        labels,
        {
            "p50": ("line-p50", [b.p50_ms for b in result.buckets]),
            "p95": ("line-p95", [b.p95_ms for b in result.buckets]),
        },
        titles,
        fmt=_axis_duration,
    )
    return {"calls": calls, "durations": durations}


def _link(selection: UsageFilter, **changes: str) -> str:
    """This page's URL with some filters changed (empty values dropped, so links stay short)."""
    fields = {
        "window": selection.window,
        "user": selection.user,
        "endpoint": selection.endpoint,
        "server": selection.server,
        "tool": selection.tool,
        **changes,
    }
    query = urlencode({k: v for k, v in fields.items() if v and not (k == "window" and v == "24h")})
    return f"?{query}" if query else "?"


def _rows(result: Usage, selection: UsageFilter) -> dict[str, list]:
    for row in result.servers:
        row.link, row.spark = (
            _link(selection, server=row.server, tool=""),
            charts.sparkline(row.series),
        )
    for row in result.tools[:MAX_TOOL_ROWS]:
        row.link, row.spark = (
            _link(selection, server=row.server, tool=row.tool),
            charts.sparkline(row.series),
        )
    return {"servers": result.servers, "tools": result.tools[:MAX_TOOL_ROWS]}


@login_required
@require_GET
def usage_page(request: HttpRequest) -> HttpResponse:
    selection = UsageForm(request.GET).selection()
    try:
        result = selectors.usage(request.user, selection)
    except selectors.UsageForbidden as exc:
        raise PermissionDenied(str(exc)) from None
    context = {
        "nav": "usage",
        "selection": selection,
        "usage": result,
        "charts": _charts(result),
        **_rows(result, selection),
        "more_tools": max(0, len(result.tools) - MAX_TOOL_ROWS),
        "windows": [
            (w, _link(selection, window=key), key == selection.window) for key, w in WINDOWS.items()
        ],
        "clear_server": _link(selection, server="", tool=""),
        "clear_tool": _link(selection, tool=""),
        "users": selectors.usage_users(request.user),
        "endpoints": visible_endpoints(request.user).order_by("-is_default", "name"),
        "time_zone": timezone.get_current_timezone_name(),
    }
    return render(request, "web/usage.html", context)
