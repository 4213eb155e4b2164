"""The Tools page: search as you type, grouped by server, toggles with a live budget bar.

htmx requests get fragments: a toggled row plus out-of-band swaps of the budget bar, the
group's count and the message area. With 2,000 tools, closed groups load their rows on open.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from apps.catalog.models import McpServer, Tool
from apps.catalog.selectors import visible_tools
from apps.credentials.selectors import servers_needing_credentials
from apps.credentials.upstream import selectors as upstream_selectors
from apps.discovery.selectors import rank_tools
from apps.toolsets import selectors, services
from apps.toolsets.models import Endpoint

OPEN_ALL_UP_TO = 150  # tools; beyond this, groups start closed and load their rows on open
MAX_SEARCH_ROWS = 200


@dataclass
class Group:
    server: McpServer
    total: int = 0
    enabled: int = 0
    tools: list[Tool] = field(default_factory=list)
    open: bool = False
    personal: bool = False  # the server takes each user's own credentials
    needs: list[str] = field(default_factory=list)  # required variables this user has not filled

    @property
    def rows(self) -> list[Tool] | None:
        return self.tools if self.open else None


def own_endpoint(request: HttpRequest, slug: str | None = None) -> Endpoint:
    if slug:
        return get_object_or_404(selectors.visible_endpoints(request.user), slug=slug)
    return services.ensure_default_endpoint(user=request.user)


def _rows(request: HttpRequest, endpoint: Endpoint) -> QuerySet[Tool]:
    return (
        selectors.endpoint_tools(request.user, endpoint)
        .select_related("server")
        .only(
            "id",
            "name",
            "description",
            "token_estimate",
            "available",
            "server__name",
            "server__status",
        )
        .order_by("server__name", "name")
    )


def _search(tools: QuerySet[Tool], query: str) -> QuerySet[Tool]:
    for word in query.split():
        tools = tools.filter(
            Q(name__icontains=word)
            | Q(description__icontains=word)
            | Q(server__name__icontains=word)
        )
    return tools


def _ranked(tools: QuerySet[Tool], endpoint: Endpoint, query: str) -> list[Tool]:
    """Best matches first (the discovery index: stems, split names, parameters), then the
    remaining substring matches, so a typed prefix still finds its tool."""
    ranked = rank_tools(endpoint=endpoint, query=query, limit=MAX_SEARCH_ROWS + 1)
    substring = list(_search(tools, query).values_list("id", flat=True)[: MAX_SEARCH_ROWS + 1])
    order = {tool_id: i for i, tool_id in enumerate(dict.fromkeys([*ranked, *substring]))}
    rows = tools.filter(id__in=list(order)[: MAX_SEARCH_ROWS + 1])
    return sorted(rows, key=lambda tool: order[tool.pk])


def build_groups(tools: list[Tool], *, open_all: bool) -> list[Group]:
    groups: dict[int, Group] = {}
    for tool in tools:
        group = groups.setdefault(tool.server_id, Group(server=tool.server, open=open_all))
        group.total += 1
        group.enabled += tool.enabled
        group.tools.append(tool)
    return list(groups.values())


def list_context(request: HttpRequest, endpoint: Endpoint) -> dict:
    query = request.GET.get("q", "").strip()[:100]
    tools = _rows(request, endpoint)
    if query:
        matches = _ranked(tools, endpoint, query)
        shown = matches[:MAX_SEARCH_ROWS]
        groups = mark_credentials(build_groups(shown, open_all=True), request.user.pk)
        return {
            "query": query,
            "groups": groups,
            "match_count": len(shown),
            "shown": len(shown),
            "truncated": len(matches) > MAX_SEARCH_ROWS,
            "endpoint": endpoint,
        }
    total = tools.count()
    groups = (
        build_groups(list(tools), open_all=True)
        if total <= OPEN_ALL_UP_TO
        else _closed_groups(tools)
    )
    return {
        "query": "",
        "groups": mark_credentials(groups, request.user.pk),
        "total": total,
        "endpoint": endpoint,
    }


def mark_credentials(groups: list[Group], user_id: int) -> list[Group]:
    """Flag the servers that take each user's own credentials, and those this user still has to fill."""
    servers = list(
        McpServer.objects.filter(pk__in=[g.server.pk for g in groups])
    )  # whole rows: one query
    personal = {s.pk for s in servers if s.has_user_variables}
    needing = servers_needing_credentials([s for s in servers if s.pk in personal], user_id)
    for group in groups:
        group.personal = group.server.pk in personal
        group.needs = needing.get(group.server.name, [])
    return groups


def _closed_groups(tools: QuerySet[Tool]) -> list[Group]:
    """Per-server counts only (one aggregate query); rows load when a group is opened."""
    counts = (
        tools.order_by()
        .values("server_id")
        .annotate(total=Count("id"), on=Count("id", filter=Q(enabled=True)))
    )
    servers = McpServer.objects.only("id", "name", "status").in_bulk(
        [row["server_id"] for row in counts]
    )
    groups = [
        Group(server=servers[row["server_id"]], total=row["total"], enabled=row["on"])
        for row in counts
    ]
    return sorted(groups, key=lambda group: group.server.name)


@login_required
@require_GET
def tools_page(request: HttpRequest) -> HttpResponse:
    endpoint = own_endpoint(request, request.GET.get("endpoint"))
    context = list_context(request, endpoint)
    context.update(
        nav="tools",
        budget=selectors.endpoint_budget(endpoint),
        endpoints=list(selectors.visible_endpoints(request.user).order_by("-is_default", "name")),
        connections=upstream_selectors.connections_for(request.user),
    )
    return render(request, "web/tools.html", context)


@login_required
@require_GET
def tool_list(request: HttpRequest, slug: str) -> HttpResponse:
    endpoint = own_endpoint(request, slug)
    if "HX-Request" not in request.headers:
        query = urlencode({"endpoint": endpoint.slug, "q": request.GET.get("q", "")})
        return redirect(f"{reverse('web:tools')}?{query}")
    return render(request, "web/_tool_list.html", list_context(request, endpoint))


@login_required
@require_GET
def tool_group(request: HttpRequest, slug: str, server: str) -> HttpResponse:
    endpoint = own_endpoint(request, slug)
    tools = list(_rows(request, endpoint).filter(server__name=server))
    group = Group(
        server=tools[0].server if tools else McpServer(name=server), tools=tools, open=True
    )
    return render(request, "web/_tool_rows.html", {"group": group, "endpoint": endpoint})


@login_required
@require_POST
def toggle_tool(request: HttpRequest, slug: str, tool_id: int) -> HttpResponse:
    endpoint = own_endpoint(request, slug)
    tool = get_object_or_404(_rows(request, endpoint), pk=tool_id)
    wanted = request.POST.get("enabled") == "on"
    error = ""
    if wanted and not tool.available:
        error = f"{tool.name} is unavailable: its server no longer offers it."
    else:
        try:
            services.set_tool_enabled(endpoint=endpoint, tool=tool, enabled=wanted)
        except services.BudgetExceeded as exc:
            error = f"Not enabled: {exc}"
    tool = _rows(request, endpoint).get(pk=tool_id)
    return _fragment(
        request, endpoint, "web/_tool_row.html", {"tool": tool}, error=error, server=tool.server
    )


@login_required
@require_POST
def toggle_server(request: HttpRequest, slug: str, server: str) -> HttpResponse:
    endpoint = own_endpoint(request, slug)
    tools = list(visible_tools(request.user).filter(server__name=server, available=True))
    if not tools:
        return HttpResponse(status=404)
    error = ""
    try:
        services.set_tools_enabled(
            endpoint=endpoint, tools=tools, enabled=request.POST.get("enabled") == "on"
        )
    except services.BudgetExceeded as exc:
        error = f"Not enabled: {exc}"
    rows = _rows(request, endpoint).filter(server__name=server)
    query = request.POST.get("q", "").strip()
    group = mark_credentials(
        build_groups(list(_search(rows, query) if query else rows), open_all=True), request.user.pk
    )[0]
    return _fragment(
        request, endpoint, "web/_tool_group.html", {"group": group, "query": query}, error=error
    )


def _fragment(
    request: HttpRequest,
    endpoint: Endpoint,
    template: str,
    context: dict,
    *,
    error: str,
    server: McpServer | None = None,
) -> HttpResponse:
    """The swapped fragment, then out-of-band: budget bar, the server's count, and the message area."""
    budget = selectors.endpoint_budget(endpoint)
    warning = (
        ""
        if error or budget.state != "over"
        else f"Over budget by {budget.over_by} tokens (warn-only endpoint)."
    )
    parts = [
        render_to_string(template, {**context, "endpoint": endpoint}, request=request),
        render_to_string("web/_budget.html", {"budget": budget, "oob": True}, request=request),
        render_to_string("web/_flash.html", {"error": error, "warning": warning}, request=request),
    ]
    if server is not None:
        parts.append(_count_oob(request, endpoint, server))
    return HttpResponse("".join(parts))


def _count_oob(request: HttpRequest, endpoint: Endpoint, server: McpServer) -> str:
    tools = selectors.endpoint_tools(request.user, endpoint).filter(server=server)
    total, enabled = tools.count(), tools.filter(enabled=True).count()
    return f'<span class="group-count" id="count-{server.name}" hx-swap-oob="true">{enabled} / {total} enabled</span>'


@login_required
@require_GET
def tool_detail(request: HttpRequest, tool_id: int) -> HttpResponse:
    tool = get_object_or_404(visible_tools(request.user), pk=tool_id)
    context = {
        "tool": tool,
        "schema": json.dumps(tool.input_schema, indent=2),
        "output_schema": json.dumps(tool.output_schema, indent=2) if tool.output_schema else "",
        "annotations": json.dumps(tool.annotations, indent=2) if tool.annotations else "",
    }
    return render(request, "web/_tool_detail.html", context)
