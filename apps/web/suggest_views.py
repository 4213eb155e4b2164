""" "Which tools for this task?" on the Tools page: suggestions within a budget, each with its
reason, applied in one click (replace or merge the enabled set, or save as a preset)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.catalog.selectors import visible_tools
from apps.discovery.suggest import suggest_tools
from apps.toolsets import services
from apps.web.tool_views import own_endpoint

MODES = ("replace", "merge", "preset")


@login_required
@require_POST
def suggest(request: HttpRequest, slug: str) -> HttpResponse:
    endpoint = own_endpoint(request, slug)
    task = request.POST.get("task", "").strip()[:4000]
    budget = _budget(request.POST.get("budget"), endpoint.token_budget)
    if not task or budget is None:
        return render(
            request,
            "web/_suggestions.html",
            {
                "error": "Describe the task, and give a budget of at least 1 token.",
                "endpoint": endpoint,
            },
        )
    result = suggest_tools(endpoint=endpoint, task=task, budget=budget)
    return render(request, "web/_suggestions.html", {"result": result, "endpoint": endpoint})


def _budget(raw: str | None, default: int) -> int | None:
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if value >= 1 else None


@login_required
@require_POST
def apply_suggestion(request: HttpRequest, slug: str) -> HttpResponse:
    endpoint = own_endpoint(request, slug)
    back = reverse("web:tools") + f"?endpoint={endpoint.slug}"
    mode, keys = request.POST.get("mode"), request.POST.getlist("tools")
    tools = [t for t in visible_tools(request.user).filter(available=True) if t.key in set(keys)]
    if mode not in MODES or not tools or len(tools) != len(set(keys)):
        messages.error(
            request, "Nothing applied: choose replace, merge or preset, and tools you may use."
        )
        return redirect(back)
    if mode == "preset":
        name = request.POST.get("name", "").strip()[:100] or "Suggested tools"
        services.create_preset(
            owner=request.user,
            name=name,
            tool_keys=[t.key for t in tools],
            note="From a suggestion",
        )
        messages.success(request, f"Saved the {len(tools)} suggested tools as the preset “{name}”.")
        return redirect(back)
    write = services.set_enabled_tools if mode == "replace" else services.enable_tools
    try:
        write(endpoint=endpoint, tools=tools)
    except services.BudgetExceeded as exc:
        messages.error(request, f"Nothing applied: {exc}")
        return redirect(back)
    messages.success(
        request,
        f"{'Replaced the enabled set with' if mode == 'replace' else 'Enabled'} {len(tools)} suggested tools.",
    )
    return redirect(back)
