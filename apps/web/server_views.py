"""Servers page actions for staff: test the connection, discover now, read stderr and counters."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST

from apps.catalog import operations
from apps.catalog.models import McpServer


def _staff_server(request: HttpRequest, name: str) -> McpServer:
    if not request.user.is_staff:
        raise PermissionDenied("Server operations are for staff.")
    return get_object_or_404(McpServer, name=name)


def _row(request: HttpRequest, name: str, **panel) -> HttpResponse:
    """The server's row again (its status may have changed) with the action's result in a panel under it."""
    server = McpServer.objects.annotate(tool_count=Count("tools", distinct=True)).get(name=name)
    return render(request, "web/_server_row.html", {"server": server, **panel})


@login_required
@require_POST
def test_server(request: HttpRequest, name: str) -> HttpResponse:
    verdict = operations.check_health(server=_staff_server(request, name))
    return _row(request, name, verdict=verdict)


@login_required
@require_POST
def discover_server(request: HttpRequest, name: str) -> HttpResponse:
    outcome = operations.discover_now(server=_staff_server(request, name))
    return _row(request, name, discovery=outcome)


@login_required
@require_GET
def server_live(request: HttpRequest, name: str) -> HttpResponse:
    server = _staff_server(request, name)
    return _row(request, name, live=operations.live_state(server_name=server.name))
