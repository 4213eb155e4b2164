"""Admin: who connected which OAuth backend, and the hub's registrations (never a token or secret)."""

from __future__ import annotations

from django.contrib import admin

from apps.catalog.admin import ReadOnlyAdminMixin
from apps.credentials.upstream.models import UpstreamOAuthClient, UpstreamOAuthGrant


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
        return client.client_info.get("client_id", "")
