"""Staff see which apps users allowed onto which endpoints (the toolkit's own admin shows the
applications and tokens); revoking is the owner's, on the endpoint page."""

from django.contrib import admin

from apps.oauth.models import ConnectedApp


@admin.register(ConnectedApp)
class ConnectedAppAdmin(admin.ModelAdmin):
    list_display = ("application", "endpoint", "granted_at", "last_used_at")
    list_select_related = ("application", "endpoint")
    search_fields = ("application__name", "endpoint__slug", "endpoint__owner__username")
    readonly_fields = ("application", "endpoint", "granted_at", "last_used_at")

    def has_add_permission(self, request) -> bool:
        return False
