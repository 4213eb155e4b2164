"""The Models page: LLM providers you can use, yours to add and edit (staff: shared ones), test and list models."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.llm import detect, selectors, services
from apps.llm.forms import ProviderForm
from apps.llm.models import Provider


def _providers(user) -> list[Provider]:
    # Your own first, then the shared ones.
    providers = (
        selectors.providers_for(user)
        .select_related("owner")
        .order_by(F("owner_id").asc(nulls_last=True), "name")
    )
    providers = list(providers)
    for provider in providers:
        provider.editable = services.can_edit(user, provider)
    return providers


def _editable(request: HttpRequest, provider_id: int) -> Provider:
    provider = get_object_or_404(selectors.providers_for(request.user), pk=provider_id)
    if not services.can_edit(request.user, provider):
        raise PermissionDenied("Only staff change shared providers.")
    return provider


def _page(request: HttpRequest, form: ProviderForm, status: int = 200) -> HttpResponse:
    context = {"nav": "models", "providers": _providers(request.user), "form": form}
    return render(request, "web/models.html", context, status=status)


@login_required
@require_GET
def models_page(request: HttpRequest) -> HttpResponse:
    return _page(request, ProviderForm())


@sensitive_post_parameters("api_key")
@login_required
@require_POST
def add_provider(request: HttpRequest) -> HttpResponse:
    form = ProviderForm(request.POST)
    shared = request.POST.get("shared") == "on"
    if form.is_valid():
        try:
            provider = services.create_provider(
                actor=request.user,
                shared=shared,
                api_key=form.new_api_key() or "",
                **form.model_fields(),
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, f"Added {provider.name}. Test it to see its models.")
            return redirect("web:models")
    return _page(request, form, status=400)


@sensitive_post_parameters("api_key")
@login_required
@require_http_methods(["GET", "POST"])
def edit_provider(request: HttpRequest, provider_id: int) -> HttpResponse:
    provider = _editable(request, provider_id)
    form = ProviderForm(request.POST or None, instance=provider)
    if request.method == "POST" and form.is_valid():
        try:
            services.update_provider(
                actor=request.user,
                provider=provider,
                api_key=form.new_api_key(),
                **form.model_fields(),
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, f"Saved {provider.name}.")
            return redirect("web:models")
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "web/model_edit.html",
        {"nav": "models", "form": form, "provider": provider},
        status=status,
    )


@login_required
@require_POST
def delete_provider(request: HttpRequest, provider_id: int) -> HttpResponse:
    provider = _editable(request, provider_id)
    services.delete_provider(actor=request.user, provider=provider)
    messages.success(request, f"Deleted {provider.name}.")
    return redirect("web:models")


@login_required
@require_POST
def test_provider(request: HttpRequest, provider_id: int) -> HttpResponse:
    provider = get_object_or_404(selectors.providers_for(request.user), pk=provider_id)
    return render(
        request,
        "web/_provider_check.html",
        {"provider": provider, "check": services.list_models(provider)},
    )


@login_required
@require_GET
def detected_servers(request: HttpRequest) -> HttpResponse:
    """Staff: local LM Studio / Ollama servers that answer and are not providers yet (loaded lazily)."""
    servers = (
        detect.detect_unconfigured(timeout=1.5)
        if selectors.manages_shared_providers(request.user)
        else []
    )
    return render(request, "web/_detected.html", {"servers": servers})


@login_required
@require_POST
def add_detected(request: HttpRequest) -> HttpResponse:
    if not selectors.manages_shared_providers(request.user):
        raise PermissionDenied("Only staff allowed to change providers add shared ones.")
    wanted = request.POST.get("base_url", "")
    server = next(
        (s for s in detect.detect_unconfigured(timeout=1.5) if s.base_url == wanted), None
    )
    if server is None:
        messages.error(
            request, f"Nothing answers at {wanted} any more, or it is already a provider."
        )
    else:
        provider = services.add_local_server(actor=request.user, server=server)
        messages.success(
            request,
            f"Added {server.label} as shared provider {provider.name} (model {provider.default_model}).",
        )
    return redirect("web:models")
