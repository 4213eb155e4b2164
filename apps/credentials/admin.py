"""Admins see who filled which variables of which server — never a value (the form has no such field)."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from apps.credentials.models import UserCredential


@admin.register(UserCredential)
class UserCredentialAdmin(admin.ModelAdmin):
    list_display = ("user", "server", "filled", "updated_at")
    list_filter = ("server",)
    search_fields = ("user__username", "server__name")
    fields = ("user", "server", "filled", "created_at", "updated_at")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).select_related("user", "server").defer("values")

    @admin.display(description="filled variables")
    def filled(self, row: UserCredential) -> str:
        return ", ".join(row.names) or "—"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # each user fills their own; an admin may only remove a row

    def has_change_permission(
        self, request: HttpRequest, obj: UserCredential | None = None
    ) -> bool:
        return False

    def delete_model(self, request: HttpRequest, obj: UserCredential) -> None:
        # Through the service: the user's connection closes and their endpoints stop using the values.
        from apps.credentials.services import delete_credentials

        delete_credentials(user=obj.user, server=obj.server)

    def delete_queryset(self, request: HttpRequest, queryset) -> None:
        for row in queryset.select_related("user", "server"):
            self.delete_model(request, row)
