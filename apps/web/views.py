"""Pages: sign in/out, dashboard, endpoint (URL, tokens shown once, client snippets), servers (staff)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts.models import AccessToken
from apps.accounts.services import create_access_token, revoke_access_token
from apps.accounts.sso import config as sso_config
from apps.accounts.sso import session as sso_session
from apps.accounts.sso import views as sso_views
from apps.catalog.selectors import visible_servers
from apps.core.crypto import decrypt, encrypt
from apps.gateway.dynamic import META_TOKENS
from apps.oauth import selectors as oauth_selectors
from apps.oauth.models import ConnectedApp
from apps.oauth.services import revoke_connection
from apps.toolsets import selectors, services
from apps.toolsets.snippets import client_snippets, endpoint_url
from apps.web.forms import EndpointSettingsForm, TokenForm
from apps.web.tool_views import own_endpoint


class LoginView(auth_views.LoginView):
    template_name = "web/login.html"
    redirect_authenticated_user = True

    def render_to_response(self, context, **kwargs):
        response = super().render_to_response(context, **kwargs)
        # The SSO buttons post here and are redirected to the providers: the CSP must allow it.
        if origins := sso_config.provider_origins():
            response._csp_update = {"form-action": origins}
        return response


class LogoutView(auth_views.LogoutView):
    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        # An SSO session ends at its provider too; read it before the hub's session ends.
        at_provider = sso_session.end_session_url(request)
        response = super().post(request, *args, **kwargs)
        return sso_views.signed_out_at_provider(request, at_provider) if at_provider else response


def _servers_at_a_glance(user):
    return visible_servers(user).annotate(tool_count=Count("tools", distinct=True)).order_by("name")


@login_required
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    endpoints = (
        selectors.visible_endpoints(request.user)
        .annotate(enabled=Count("tools"))
        .order_by("-is_default", "name")
    )
    cards = [
        {"endpoint": e, "url": endpoint_url(e), "budget": selectors.endpoint_budget(e)}
        for e in endpoints
    ]
    return render(
        request,
        "web/dashboard.html",
        {"cards": cards, "servers": _servers_at_a_glance(request.user)},
    )


# The raw token crosses one redirect in the session, encrypted: a reload of the page must neither
# create a second token nor show this one again.
_NEW_TOKEN_KEY = "web:new-token:{endpoint_id}"


@login_required
@require_http_methods(["GET", "POST"])
def endpoint_page(request: HttpRequest, slug: str) -> HttpResponse:
    endpoint = own_endpoint(request, slug)
    if request.method == "POST":
        return _create_token(request, endpoint)
    stashed = request.session.pop(_NEW_TOKEN_KEY.format(endpoint_id=endpoint.pk), None) or {}
    raw_token = decrypt(stashed["token"]) if stashed else ""
    context = {
        "endpoint": endpoint,
        "url": endpoint_url(endpoint),
        "budget": selectors.endpoint_budget(endpoint),
        "raw_token": raw_token,
        "snippets": client_snippets(endpoint, raw_token)
        if stashed.get("mcp")
        else client_snippets(endpoint),
        # This endpoint's MCP tokens, and the account-wide ones (API, or older full tokens) that reach it too.
        "tokens": AccessToken.objects.filter(user=request.user)
        .filter(Q(endpoint=endpoint) | Q(endpoint__isnull=True))
        .select_related("endpoint"),
        "form": TokenForm(),
        "connected_apps": oauth_selectors.connected_apps(endpoint),
        "settings_form": EndpointSettingsForm.for_endpoint(endpoint),
    }
    # What a client's tools/list costs in each mode: the enabled tools, plus the meta-tools when dynamic.
    context["listing"] = {
        "static": context["budget"].used,
        "dynamic": context["budget"].used + META_TOKENS,
    }
    return render(request, "web/endpoint.html", context)


def _create_token(request: HttpRequest, endpoint) -> HttpResponse:
    form = TokenForm(request.POST)
    if form.is_valid():
        scope = form.cleaned_data["scope"] or "mcp"
        _, raw = create_access_token(
            user=request.user,
            name=form.cleaned_data["name"] or f"{endpoint.name} token",
            endpoint=endpoint if scope == "mcp" else None,
            scope=scope,
        )
        # Shown once, on the redirected GET: snippets carry the token only when it works on this endpoint.
        request.session[_NEW_TOKEN_KEY.format(endpoint_id=endpoint.pk)] = {
            "token": encrypt(raw),
            "mcp": scope == "mcp",
        }
    else:
        messages.error(request, "Token not created. " + _form_errors(form))
    return redirect(reverse("web:endpoint", args=[endpoint.slug]) + "#token")


def _form_errors(form) -> str:
    return "; ".join(
        f"{form.fields[name].label or name.capitalize()}: {' '.join(errors)}"
        for name, errors in form.errors.items()
    )


@login_required
@require_POST
def endpoint_settings(request: HttpRequest, slug: str) -> HttpResponse:
    endpoint = own_endpoint(request, slug)
    form = EndpointSettingsForm(request.POST)
    if form.is_valid():
        services.update_endpoint(endpoint=endpoint, **form.cleaned_data)
        messages.success(request, "Endpoint settings saved.")
    else:
        messages.error(request, "Settings not saved. " + _form_errors(form))
    return redirect("web:endpoint", slug=endpoint.slug)


@login_required
@require_http_methods(["GET", "POST"])
def new_endpoint(request: HttpRequest) -> HttpResponse:
    form = (
        EndpointSettingsForm(request.POST)
        if request.method == "POST"
        else EndpointSettingsForm.for_new()
    )
    if form.is_valid():
        endpoint = services.create_endpoint(owner=request.user, **form.cleaned_data)
        messages.success(
            request, f"Endpoint “{endpoint.name}” created. Create a token to connect a client."
        )
        return redirect("web:endpoint", slug=endpoint.slug)
    return render(request, "web/endpoint_new.html", {"form": form})


@login_required
@require_http_methods(["GET", "POST"])
def delete_endpoint(request: HttpRequest, slug: str) -> HttpResponse:
    """GET asks for confirmation (saying what goes with it); POST deletes."""
    endpoint = own_endpoint(request, slug)
    if request.method == "POST":
        try:
            services.delete_endpoint(endpoint=endpoint)
        except services.DefaultEndpointProtected as exc:
            messages.error(request, str(exc))
            return redirect("web:endpoint", slug=endpoint.slug)
        messages.success(request, f"Endpoint “{endpoint.name}” deleted.")
        return redirect("web:dashboard")
    context = {
        "endpoint": endpoint,
        "url": endpoint_url(endpoint),
        "enabled": endpoint.tools.count(),
        "tokens": AccessToken.objects.filter(endpoint=endpoint).active().count(),
    }
    return render(request, "web/endpoint_delete.html", context)


@login_required
@require_POST
def revoke_token(request: HttpRequest, slug: str, token_id: int) -> HttpResponse:
    token = get_object_or_404(AccessToken, pk=token_id, user=request.user)
    revoke_access_token(token=token)
    messages.success(request, f"Token {token.prefix}… revoked.")
    return redirect("web:endpoint", slug=slug)


@login_required
@require_POST
def revoke_connected_app(request: HttpRequest, slug: str, connection_id: int) -> HttpResponse:
    endpoint = own_endpoint(request, slug)
    connection = get_object_or_404(
        ConnectedApp.objects.select_related("application", "endpoint"),
        pk=connection_id,
        endpoint=endpoint,
    )
    revoke_connection(connection=connection)
    messages.success(request, f"{connection.application} can no longer use this endpoint.")
    return redirect("web:endpoint", slug=slug)


@login_required
@require_GET
def default_endpoint(request: HttpRequest) -> HttpResponse:
    return redirect("web:endpoint", slug=own_endpoint(request).slug)


@login_required
@require_GET
def servers_page(request: HttpRequest) -> HttpResponse:
    if not request.user.is_staff:
        raise PermissionDenied("The servers page is for staff.")
    return render(
        request,
        "web/servers.html",
        {"servers": _servers_at_a_glance(request.user), "nav": "servers"},
    )
