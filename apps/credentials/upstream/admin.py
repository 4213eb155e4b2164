"""Admin: who connected which OAuth backend, and the hub's registrations (never a token or secret)."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import models
from django.http import HttpRequest
from django.urls import reverse

from apps.catalog.admin import ReadOnlyAdminMixin
from apps.core import public_url
from apps.credentials.upstream import services
from apps.credentials.upstream.models import (
    UpstreamOAuthApp,
    UpstreamOAuthClient,
    UpstreamOAuthGrant,
)


def callback_url() -> str:
    """The redirect URI to register with the app at the authorization server."""
    return public_url.absolute(reverse("web:upstream_oauth_callback"))


class UpstreamOAuthAppForm(forms.ModelForm):
    client_secret = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text="Stored encrypted, never shown. Leave empty to keep the current one.",
    )

    class Meta:
        model = UpstreamOAuthApp
        fields = [
            "server",
            "client_id",
            "client_secret",
            "token_auth_method",
            "scopes",
            "metadata_url",
            "authorization_endpoint",
            "token_endpoint",
            "revocation_endpoint",
        ]

    def clean_client_secret(self) -> str:
        return self.cleaned_data["client_secret"] or (
            self.instance.client_secret if self.instance.pk else ""
        )

    def _post_clean(self) -> None:
        super()._post_clean()  # the model's own checks (metadata URL or endpoints, …)
        if self.errors:
            return
        try:  # then the authorization server itself: a metadata URL that answers with metadata
            services.read_app_server(self.instance)
        except ValidationError as exc:
            self._update_errors(exc)


@admin.register(UpstreamOAuthApp)
class UpstreamOAuthAppAdmin(admin.ModelAdmin):
    """OAuth apps registered by hand at authorization servers without dynamic registration."""

    form = UpstreamOAuthAppForm
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    list_display = ["server", "client_id", "issuer", "scopes", "grant_count"]
    search_fields = ["server__name", "client_id"]
    autocomplete_fields = ["server"]

    def get_form(self, request: HttpRequest, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)
        form.base_fields[
            "client_id"
        ].help_text = (
            f"Register the app with the redirect URI {callback_url()} and paste its client id here."
        )
        return form

    def save_model(self, request: HttpRequest, obj: UpstreamOAuthApp, form, change) -> None:
        services.save_app(app=obj)

    def delete_model(self, request: HttpRequest, obj: UpstreamOAuthApp) -> None:
        services.delete_app(app=obj)

    def delete_queryset(self, request: HttpRequest, queryset) -> None:
        for app in queryset:
            services.delete_app(app=app)

    @admin.display(description="issuer")
    def issuer(self, app: UpstreamOAuthApp) -> str:
        return str(app.authorization_server.get("issuer", ""))

    @admin.display(description="connected users")
    def grant_count(self, app: UpstreamOAuthApp) -> int:
        return UpstreamOAuthGrant.objects.filter(client__app=app, broken=False).count()


@admin.register(UpstreamOAuthGrant)
class UpstreamOAuthGrantAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Staff see and may delete (disconnect) users' grants; tokens are never shown or edited."""

    list_display = ["user", "server", "scope", "expires_at", "refreshed_at", "broken", "created_at"]
    list_filter = ["broken", "server"]
    search_fields = ["user__username", "server__name"]
    fields = [
        "user",
        "server",
        "scope",
        "expires_at",
        "refreshed_at",
        "broken",
        "problem",
        "created_at",
    ]
    readonly_fields = fields


@admin.register(UpstreamOAuthClient)
class UpstreamOAuthClientAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The hub's registration per backend and callback; deleting one makes the next Connect register again."""

    list_display = ["server", "redirect_uri", "client_id", "created_at"]
    fields = ["server", "redirect_uri", "client_id", "created_at"]
    readonly_fields = fields

    @admin.display(description="client id")
    def client_id(self, client: UpstreamOAuthClient) -> str:
        return services.client_info(client).client_id
