"""Activation patterns on the endpoint page: add one (a clear message when it is refused) or remove one."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from apps.discovery import services
from apps.web.tool_views import own_endpoint


@login_required
@require_POST
def add_pattern(request: HttpRequest, slug: str) -> HttpResponse:
    endpoint = own_endpoint(request, slug)
    targets = [t.strip() for t in request.POST.get("targets", "").split(",") if t.strip()]
    try:
        priority = int(request.POST.get("priority") or 0)
        services.create_pattern(
            endpoint=endpoint,
            pattern=request.POST.get("pattern", ""),
            targets=targets,
            priority=priority,
        )
    except ValueError:
        messages.error(request, "Pattern not added: the priority must be a whole number.")
    except ValidationError as exc:
        messages.error(
            request,
            "Pattern not added: " + " ".join(m for ms in exc.message_dict.values() for m in ms),
        )
    else:
        messages.success(request, "Activation pattern added.")
    return redirect("web:endpoint", slug=endpoint.slug)


@login_required
@require_POST
def delete_pattern(request: HttpRequest, slug: str, pattern_id: int) -> HttpResponse:
    endpoint = own_endpoint(request, slug)
    services.delete_pattern(pattern=get_object_or_404(endpoint.activation_patterns, pk=pattern_id))
    messages.success(request, "Activation pattern removed.")
    return redirect("web:endpoint", slug=endpoint.slug)
