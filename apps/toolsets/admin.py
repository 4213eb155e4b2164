"""Admin for endpoints (enabled tools within a token budget) and presets with their versions."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.utils.html import format_html

from apps.catalog.models import Tool
from apps.toolsets.calllog import admin as calllog_admin  # noqa: F401 - registers the call log's
from apps.toolsets.forms import EndpointToolFormSet, KnownLabelsAutocompleteSelect
from apps.toolsets.models import Endpoint, EndpointTool, Preset, PresetVersion
from apps.toolsets.services import forget_exposed_names


class EndpointToolInline(admin.TabularInline):
    """Enabled tools; the autocomplete searches the whole catalog, so hundreds of tools stay usable."""

    model = EndpointTool
    formset = EndpointToolFormSet
    fields = ("tool", "token_estimate", "name_override", "description_override", "enabled_at")
    readonly_fields = ("token_estimate", "enabled_at")
    autocomplete_fields = ("tool",)
    extra = 0
    verbose_name = "enabled tool"

    def get_queryset(self, request: HttpRequest) -> QuerySet[EndpointTool]:
        rows = super().get_queryset(request).select_related("endpoint", "tool__server")
        return rows.order_by("tool__server__name", "tool__name")

    def formfield_for_foreignkey(self, db_field, request: HttpRequest, **kwargs):
        if db_field.name == "tool":
            kwargs["widget"] = KnownLabelsAutocompleteSelect(
                db_field, self.admin_site, using=kwargs.get("using")
            )
            kwargs["queryset"] = Tool.objects.select_related("server")
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    @admin.display(description="tokens")
    def token_estimate(self, endpoint_tool: EndpointTool) -> int | str:
        return endpoint_tool.tool.token_estimate if endpoint_tool.tool_id else "-"


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    list_display = (
        "slug",
        "name",
        "owner",
        "naming_strategy",
        "mode",
        "enabled_count",
        "budget_usage",
        "is_default",
    )
    list_filter = ("mode", "naming_strategy", "is_default")
    list_select_related = ("owner",)
    search_fields = ("slug", "name", "owner__username")
    autocomplete_fields = ("owner",)
    readonly_fields = ("is_default", "budget_usage", "created_at", "updated_at")
    inlines = (EndpointToolInline,)
    fieldsets = (
        (None, {"fields": ("owner", "slug", "name", "is_default")}),
        ("Serving", {"fields": ("naming_strategy", "mode")}),
        ("Budget", {"fields": ("token_budget", "budget_enforced", "budget_usage")}),
        ("Dates", {"fields": ("created_at", "updated_at")}),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Endpoint]:
        # Both aggregates follow the one endpoint_tools join, so neither multiplies the other.
        return (
            super()
            .get_queryset(request)
            .annotate(
                enabled_count=Count("endpoint_tools"),
                token_total=Coalesce(Sum("endpoint_tools__tool__token_estimate"), 0),
            )
        )

    @admin.display(description="enabled tools", ordering="enabled_count")
    def save_model(self, request: HttpRequest, obj: Endpoint, form, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if change and "naming_strategy" in form.changed_data:
            forget_exposed_names(endpoint=obj)

    def enabled_count(self, endpoint: Endpoint) -> int:
        return endpoint.enabled_count

    @admin.display(description="tokens / budget", ordering="token_total")
    def budget_usage(self, endpoint: Endpoint) -> str:
        total = getattr(endpoint, "token_total", None)
        if total is None:
            return "-"
        style = (
            "color: var(--error-fg, #ba2121); font-weight: bold"
            if total > endpoint.token_budget
            else ""
        )
        return format_html(
            '<span style="{}">{} / {}</span>', style, f"{total:,}", f"{endpoint.token_budget:,}"
        )


class PresetVersionInline(admin.TabularInline):
    model = PresetVersion
    fields = ("number", "tool_count", "note", "created_by", "created_at")
    readonly_fields = fields
    can_delete = False
    extra = 0
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Preset | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Preset | None = None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[PresetVersion]:
        return super().get_queryset(request).select_related("created_by")

    @admin.display(description="tools")
    def tool_count(self, version: PresetVersion) -> int:
        return len(version.tool_keys or [])


@admin.register(Preset)
class PresetAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "team", "visibility", "version_count", "updated_at")
    list_filter = ("visibility",)
    list_select_related = ("owner", "team")
    search_fields = ("name", "description", "owner__username", "team__name")
    autocomplete_fields = ("owner", "team")
    inlines = (PresetVersionInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Preset]:
        return super().get_queryset(request).annotate(version_count=Count("versions"))

    @admin.display(description="versions", ordering="version_count")
    def version_count(self, preset: Preset) -> int:
        return preset.version_count
