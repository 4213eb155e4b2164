"""Import and export `.mcp.json` from the Servers page (staff): preview what would change, then apply.

The same parser and import service as `manage.py mcp_import --dry-run` (apps.catalog.importing);
a preview is a dry run, and Apply writes only the text the preview showed (all or nothing).
"""

from __future__ import annotations

import hashlib
from collections import Counter

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from apps.catalog import permissions
from apps.catalog.importing import ImportResult, export_servers, import_mcp_json
from apps.catalog.mcp_json import McpJsonError
from apps.catalog.models import McpServer
from apps.web.access import staff_with_perms
from apps.web.forms import McpJsonForm

# Pasted text is not the hub host's config: never expand ${VAR} from the hub's own environment
# (it holds SECRET_KEY and the encryption keys).
NO_ENVIRONMENT: dict[str, str] = {}
LABELS = {"created": "will be created", "updated": "will change", "unchanged": "unchanged (skipped)"}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@staff_with_perms(permissions.ADD, permissions.CHANGE, what="Importing servers")
@require_http_methods(["GET", "POST"])
def import_page(request: HttpRequest) -> HttpResponse:
    form = McpJsonForm(request.POST or None, request.FILES or None)
    if request.method == "GET" or not form.is_valid():
        return _render(request, form)
    text = form.cleaned_data["text"]
    if "apply" in request.POST:
        if form.cleaned_data["previewed"] == _digest(text):
            return _apply(request, form, text)
        messages.warning(request, "The config changed after its preview: check this preview, then apply.")
    return _preview(request, form, text)


def _preview(request: HttpRequest, form: McpJsonForm, text: str) -> HttpResponse:
    try:
        result = import_mcp_json(text=text, environ=NO_ENVIRONMENT, dry_run=True,
                                 stdio_allowed=permissions.may_touch_stdio(request.user))
    except McpJsonError as exc:
        return _render(request, form, text=text, errors=exc.errors)
    return _render(request, form, text=text, result=result, digest=_digest(text))


def _apply(request: HttpRequest, form: McpJsonForm, text: str) -> HttpResponse:
    try:
        result = import_mcp_json(text=text, environ=NO_ENVIRONMENT,
                                 stdio_allowed=permissions.may_touch_stdio(request.user))
    except McpJsonError as exc:
        return _render(request, form, text=text, errors=exc.errors)
    counts = Counter(change.action for change in result.changes)
    messages.success(request, f"Imported {len(result.changes)} server(s): {counts['created']} created, "
                              f"{counts['updated']} changed, {counts['unchanged']} unchanged.")
    return redirect("web:servers")


def _render(request: HttpRequest, form: McpJsonForm, *, text: str = "", result: ImportResult | None = None,
            errors: list[str] | None = None, digest: str = "") -> HttpResponse:
    transports = dict(McpServer.Transport.choices)
    rows = [(change, transports.get(change.transport, change.transport), LABELS[change.action])
            for change in result.changes] if result else []
    counts = Counter(change.action for change in result.changes) if result else Counter()
    context = {"nav": "servers", "form": form, "text": text, "result": result, "rows": rows, "counts": counts,
               "errors": errors or [], "digest": digest, "export": export_servers()}
    return render(request, "web/servers_import.html", context, status=400 if errors else 200)


@staff_with_perms(permissions.VIEW_ALL, what="Exporting servers")
@require_GET
def export_file(request: HttpRequest) -> HttpResponse:
    """Every server as a config file, secrets replaced by ${NAME} placeholders."""
    style = "vscode" if request.GET.get("format") == "vscode" else "claude"
    export = export_servers(style=style)
    response = HttpResponse(export.text, content_type="application/json")
    filename = "mcp.json" if style == "vscode" else ".mcp.json"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
