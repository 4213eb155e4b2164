"""Servers page actions: test the connection, discover now, read stderr and counters.

Each needs the right to change that server (Django's model permission, plus the stdio permission
for a stdio server), exactly as through the API and the admin.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST

from apps.catalog import operations
from apps.catalog.models import McpServer
from apps.catalog.permissions import may_write_server
from apps.catalog.selectors import visible_servers


def _staff_server(request: HttpRequest, name: str) -> McpServer:
    server = get_object_or_404(visible_servers(request.user), name=name)
    if not may_write_server(request.user, server):
        raise PermissionDenied("You do not have permission to operate this server.")
    return server


def _row(request: HttpRequest, name: str, **panel) -> HttpResponse:
    """The server's row again (its status may have changed) with the action's result in a panel under it."""
    server = McpServer.objects.annotate(tool_count=Count("tools", distinct=True)).get(name=name)
    return render(request, "web/_server_row.html", {"server": server, **panel})


@login_required
@require_POST
def test_server(request: HttpRequest, name: str) -> HttpResponse:
    verdict = operations.check_health(server=_staff_server(request, name), user=request.user)
    return _row(request, name, verdict=verdict)


@login_required
@require_POST
def discover_server(request: HttpRequest, name: str) -> HttpResponse:
    outcome = operations.discover_now(server=_staff_server(request, name), user=request.user)
    return _row(request, name, discovery=outcome)


@login_required
@require_GET
def server_live(request: HttpRequest, name: str) -> HttpResponse:
    server = _staff_server(request, name)
    return _row(request, name, live=operations.live_state(server_name=server.name))
