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
LABELS = {
    "created": "will be created",
    "updated": "will change",
    "unchanged": "unchanged (skipped)",
}


def _digest(form: McpJsonForm) -> str:
    # Covers who would see the servers too: changing that after the preview needs a new preview.
    plain = f"{form.cleaned_data.get('audience') or 'global'}\n{form.cleaned_data['text']}"
    return hashlib.sha256(plain.encode()).hexdigest()


@staff_with_perms(permissions.ADD, permissions.CHANGE, what="Importing servers")
@require_http_methods(["GET", "POST"])
def import_page(request: HttpRequest) -> HttpResponse:
    form = McpJsonForm(request.POST or None, request.FILES or None, user=request.user)
    if request.method == "GET" or not form.is_valid():
        return _render(request, form)
    if "apply" in request.POST:
        if form.cleaned_data["previewed"] == _digest(form):
            return _apply(request, form)
        messages.warning(
            request, "The config changed after its preview: check this preview, then apply."
        )
    return _preview(request, form)


def _import(request: HttpRequest, form: McpJsonForm, *, dry_run: bool) -> ImportResult:
    return import_mcp_json(
        text=form.cleaned_data["text"],
        environ=NO_ENVIRONMENT,
        dry_run=dry_run,
        stdio_allowed=permissions.may_touch_stdio(request.user),
        **form.scope(),
    )


def _preview(request: HttpRequest, form: McpJsonForm) -> HttpResponse:
    try:
        result = _import(request, form, dry_run=True)
    except McpJsonError as exc:
        return _render(request, form, errors=exc.errors)
    return _render(request, form, result=result, digest=_digest(form))


def _apply(request: HttpRequest, form: McpJsonForm) -> HttpResponse:
    try:
        result = _import(request, form, dry_run=False)
    except McpJsonError as exc:
        return _render(request, form, errors=exc.errors)
    counts = Counter(change.action for change in result.changes)
    messages.success(
        request,
        f"Imported {len(result.changes)} server(s): {counts['created']} created, "
        f"{counts['updated']} changed, {counts['unchanged']} unchanged.",
    )
    return redirect("web:servers")


def _render(
    request: HttpRequest,
    form: McpJsonForm,
    *,
    result: ImportResult | None = None,
    errors: list[str] | None = None,
    digest: str = "",
) -> HttpResponse:
    text = getattr(form, "cleaned_data", {}).get("text", "")
    transports = dict(McpServer.Transport.choices)
    rows = (
        [
            (change, transports.get(change.transport, change.transport), LABELS[change.action])
            for change in result.changes
        ]
        if result
        else []
    )
    counts = Counter(change.action for change in result.changes) if result else Counter()
    context = {
        "nav": "servers",
        "form": form,
        "text": text,
        "result": result,
        "rows": rows,
        "counts": counts,
        "errors": errors or [],
        "digest": digest,
        "export": export_servers() if request.user.has_perm(permissions.VIEW_ALL) else None,
    }
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
