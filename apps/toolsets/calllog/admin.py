from django.contrib import admin
from django.http import HttpRequest

from apps.toolsets.models import ToolCall


@admin.register(ToolCall)
class ToolCallAdmin(admin.ModelAdmin):
    """The call log is written by the hub only (toolsets.calls): admins read and filter it, never edit it."""

    list_display = (
        "started_at",
        "user",
        "endpoint",
        "server_name",
        "tool_name",
        "ok",
        "duration_ms",
        "error",
    )
    list_filter = ("ok", "server_name")
    search_fields = ("tool_name", "exposed_name", "server_name", "error", "user__username")
    date_hierarchy = "started_at"
    list_select_related = ("user", "endpoint")
    readonly_fields = [field.name for field in ToolCall._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ToolCall | None = None) -> bool:
        return False
