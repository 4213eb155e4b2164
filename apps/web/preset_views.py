"""The Presets pages: save the current selection, share with a team, load, versions, diff, rollback."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from apps.catalog.selectors import visible_tools
from apps.toolsets import selectors, services
from apps.toolsets.models import Preset
from apps.web.forms import LoadForm, PresetForm, ShareForm
from apps.web.tool_views import own_endpoint


def _presets(user):
    return (
        selectors.visible_presets(user)
        .select_related("owner", "team")
        .prefetch_related("versions")
        .order_by("name")
    )


def _editable(request: HttpRequest, preset_id: int) -> Preset:
    preset = get_object_or_404(_presets(request.user), pk=preset_id)
    if not selectors.can_edit_preset(request.user, preset):
        raise PermissionDenied("Only the preset's owner (or its team's admins) may change it.")
    return preset


@login_required
@require_GET
def presets_page(request: HttpRequest) -> HttpResponse:
    endpoint = own_endpoint(request, request.GET.get("endpoint"))
    presets = list(_presets(request.user))
    for preset in presets:
        preset.latest = max(preset.versions.all(), key=lambda v: v.number, default=None)
        preset.editable = selectors.can_edit_preset(request.user, preset)
        preset.version_count = len(preset.versions.all())
    context = {
        "nav": "presets",
        "endpoint": endpoint,
        "endpoints": selectors.visible_endpoints(request.user).order_by("-is_default", "name"),
        "presets": presets,
        "form": PresetForm(user=request.user),
        "share_form": ShareForm(user=request.user),
        "enabled_count": endpoint.tools.count(),
        "own_names": sorted({p.name for p in presets if p.owner_id == request.user.pk}),
    }
    return render(request, "web/presets.html", context)


@login_required
@require_POST
def save_preset(request: HttpRequest) -> HttpResponse:
    """Save the endpoint's tools; under the name of one of your presets that is its next version."""
    endpoint = own_endpoint(request, request.POST.get("endpoint"))
    form = PresetForm(request.POST, user=request.user)
    if not form.is_valid():
        messages.error(request, "Preset not saved: give it a name (and a team you belong to).")
        return redirect(f"/presets/?endpoint={endpoint.slug}")
    saved = services.save_endpoint_as_preset(
        endpoint=endpoint, name=form.cleaned_data["name"], team=form.cleaned_data["team"]
    )
    preset, version, previous = saved.preset, saved.version, saved.previous
    shared = f", shared with {preset.team}" if preset.team else ""
    if previous is None:
        messages.success(
            request, f"Saved “{preset.name}” with {len(version.tool_keys)} tools{shared}."
        )
        return redirect(f"/presets/?endpoint={endpoint.slug}")
    if version is None:
        messages.info(
            request,
            f"“{preset.name}” v{previous.number} already has exactly these "
            f"{len(previous.tool_keys)} tools: no new version saved.",
        )
        return redirect("web:preset", preset_id=preset.pk)
    diff = selectors.diff_versions(previous, version)
    messages.success(
        request,
        f"Saved “{preset.name}” v{version.number}{shared}: "
        f"{len(diff.added)} added, {len(diff.removed)} removed since v{previous.number}.",
    )
    return redirect(
        reverse("web:preset", args=[preset.pk]) + f"?from={previous.number}&to={version.number}"
    )


@login_required
@require_POST
def share_preset(request: HttpRequest, preset_id: int) -> HttpResponse:
    preset = _editable(request, preset_id)
    form = ShareForm(request.POST, user=request.user)
    if form.is_valid():
        services.share_preset(preset=preset, team=form.cleaned_data["team"], user=request.user)
        messages.success(request, f"“{preset.name}” is shared with {preset.team}.")
    else:
        messages.error(request, "Choose one of your teams.")
    return redirect("web:presets")


@login_required
@require_POST
def unshare_preset(request: HttpRequest, preset_id: int) -> HttpResponse:
    preset = services.unshare_preset(preset=_editable(request, preset_id))
    messages.success(request, f"“{preset.name}” is private again.")
    return redirect("web:presets")


@login_required
@require_POST
def load_preset(request: HttpRequest, preset_id: int) -> HttpResponse:
    preset = get_object_or_404(_presets(request.user), pk=preset_id)
    form = LoadForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose an endpoint and how to load.")
        return redirect("web:presets")
    endpoint = own_endpoint(request, form.cleaned_data["endpoint"])
    version = (
        preset.versions.filter(number=request.POST.get("version") or 0).first()
        or preset.latest_version
    )
    tools = [
        t
        for t in visible_tools(request.user).filter(available=True)
        if t.key in set(version.tool_keys)
    ]
    try:
        result = services.load_preset(
            endpoint=endpoint, version=version, tools=tools, mode=form.cleaned_data["mode"]
        )
    except services.BudgetExceeded as exc:
        messages.error(request, f"Not loaded: {exc}")
        return redirect(f"/presets/?endpoint={endpoint.slug}")
    missing = f" Not found: {', '.join(result.missing)}." if result.missing else ""
    messages.success(
        request,
        f"Loaded “{preset.name}” v{version.number} onto {endpoint.name} "
        f"({form.cleaned_data['mode']}): {len(result.loaded)} tools.{missing}",
    )
    return redirect(f"/tools/?endpoint={endpoint.slug}")


@login_required
@require_GET
def preset_detail(request: HttpRequest, preset_id: int) -> HttpResponse:
    preset = get_object_or_404(_presets(request.user), pk=preset_id)
    versions = list(preset.versions.select_related("created_by").order_by("-number"))
    diff = old = new = None
    if len(versions) > 1:
        by_number = {v.number: v for v in versions}
        new = by_number.get(_int(request.GET.get("to")), versions[0])
        old = by_number.get(
            _int(request.GET.get("from")), by_number.get(new.number - 1, versions[-1])
        )
        diff = selectors.diff_versions(old, new)
    context = {
        "nav": "presets",
        "preset": preset,
        "versions": versions,
        "diff": diff,
        "old": old,
        "new": new,
        "editable": selectors.can_edit_preset(request.user, preset),
    }
    return render(request, "web/preset_detail.html", context)


@login_required
@require_POST
def rollback_preset(request: HttpRequest, preset_id: int) -> HttpResponse:
    preset = _editable(request, preset_id)
    number = _int(request.POST.get("version"))
    if not preset.versions.filter(number=number).exists():
        messages.error(request, "No such version.")
    else:
        version = services.rollback_preset(preset=preset, number=number, user=request.user)
        messages.success(request, f"Rolled back: v{version.number} has the tools of v{number}.")
    return redirect("web:preset", preset_id=preset.pk)


@login_required
@require_POST
def delete_preset(request: HttpRequest, preset_id: int) -> HttpResponse:
    preset = _editable(request, preset_id)
    preset.delete()
    messages.success(request, f"Deleted “{preset.name}”.")
    return redirect("web:presets")


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0
