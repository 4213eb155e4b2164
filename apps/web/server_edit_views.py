"""Add, edit and delete MCP servers from the Servers page (staff), beside import.

The same form as the admin (apps.catalog.forms.McpServerForm: arguments one per line, secrets
write-only and masked, the stdio permission), the same permissions as the API (model permissions;
stdio servers need *manage stdio servers*), discovery on save (tasks.discover_if_due), and a
*Test* that pings the configuration as typed before anything is saved.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from apps.catalog import operations, permissions, tasks
from apps.catalog.forms import McpServerForm
from apps.catalog.models import McpServer
from apps.web.access import staff_with_perms

# Which fields belong to which transport (the page shows one group; without script, both).
LOCAL_FIELDS = ("command", "args", "cwd", "env")
REMOTE_FIELDS = ("url", "headers")
OPENAPI_FIELDS = ("openapi_source", "openapi_file", "openapi_filters")


def _form(request: HttpRequest, instance: McpServer | None) -> McpServerForm:
    form = McpServerForm(request.POST or None, request.FILES or None, instance=instance)
    form.may_define_stdio = permissions.may_touch_stdio(request.user)
    return form


def _page(
    request: HttpRequest,
    form: McpServerForm,
    server: McpServer | None,
    verdict=None,
    status: int = 200,
) -> HttpResponse:
    groups = {"local": LOCAL_FIELDS, "remote": REMOTE_FIELDS, "openapi": OPENAPI_FIELDS}
    # The stored document is not shown on the page (it may be megabytes): fetched or uploaded.
    grouped = {name for names in groups.values() for name in names} | {"openapi_document"}
    context = {
        "nav": "servers",
        "form": form,
        "server": server,
        "verdict": verdict,
        "common": [f for f in form.visible_fields() if f.name not in grouped],
        "local": [form[name] for name in LOCAL_FIELDS],
        "remote": [form[name] for name in REMOTE_FIELDS],
        "openapi": [form[name] for name in OPENAPI_FIELDS],
    }
    return render(request, "web/server_form.html", context, status=status)


def _submit(request: HttpRequest, form: McpServerForm, server: McpServer | None) -> HttpResponse:
    if not form.is_valid():
        return _page(request, form, server, status=400)
    if "test" in request.POST:
        draft = form.save(commit=False)
        return _page(
            request, form, server, verdict=operations.test_draft(server=draft, user=request.user)
        )
    with transaction.atomic():
        saved = form.save()
        tasks.discover_if_due(servers=[saved], user=request.user)
    messages.success(
        request,
        f"Server “{saved.name}” saved{'; discovering its tools now' if saved.discovery_due else ''}.",
    )
    return redirect("web:servers")


@staff_with_perms(permissions.ADD, what="Adding servers")
@require_http_methods(["GET", "POST"])
def new_server(request: HttpRequest) -> HttpResponse:
    form = _form(request, None)
    if request.method == "POST":
        return _submit(request, form, None)
    return _page(request, form, None)


def _writable(request: HttpRequest, name: str, permission: str) -> McpServer:
    server = get_object_or_404(McpServer, name=name)
    if server.is_builtin:
        raise PermissionDenied("The hub's own server is built in: there is nothing to edit.")
    if not permissions.may_write_server(request.user, server, permission=permission):
        raise PermissionDenied(
            "Changing this server needs the permission to (a stdio server: it runs a command on the hub's host)."
        )
    return server


@staff_with_perms(permissions.CHANGE, what="Editing servers")
@require_http_methods(["GET", "POST"])
def edit_server(request: HttpRequest, name: str) -> HttpResponse:
    server = _writable(request, name, permissions.CHANGE)
    form = _form(request, server)
    if request.method == "POST":
        return _submit(request, form, server)
    return _page(request, form, server)


@staff_with_perms(permissions.DELETE, what="Deleting servers")
@require_http_methods(["GET", "POST"])
def delete_server(request: HttpRequest, name: str) -> HttpResponse:
    server = _writable(request, name, permissions.DELETE)
    if request.method == "POST":
        server.delete()
        messages.success(request, f"Server “{name}” deleted, with its tools on every endpoint.")
        return redirect("web:servers")
    uses = (
        server.tools.filter(endpoint_tools__isnull=False)
        .values("endpoint_tools__endpoint")
        .distinct()
        .count()
    )
    return render(
        request, "web/server_delete.html", {"nav": "servers", "server": server, "endpoints": uses}
    )
