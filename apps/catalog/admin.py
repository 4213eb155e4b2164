"""Admin for servers (write-only secrets) and the read-only catalog discovery fills in."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.template.defaultfilters import truncatechars
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.html import format_html, format_html_join
from django.views.decorators.debug import sensitive_post_parameters

from apps.catalog import operations, tasks
from apps.catalog.forms import McpServerForm
from apps.catalog.models import McpServer, Prompt, Resource, ResourceTemplate, Tool
from apps.catalog.permissions import may_touch_stdio

# The server page lists this many tools; the filtered changelist has them all.
TOOL_TABLE_ROWS = 100


def pretty_json(value: Any) -> str:
    if value is None:
        return "-"
    return format_html(
        "<pre>{}</pre>", json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    )


class ReadOnlyAdminMixin:
    """Discovery owns these rows: admins look, filter and may delete, but never add or edit."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(McpServer)
class McpServerAdmin(admin.ModelAdmin):
    form = McpServerForm
    list_display = (
        "name",
        "transport",
        "enabled",
        "visibility",
        "status",
        "tool_count",
        "short_last_error",
        "last_checked_at",
    )
    list_filter = ("transport", "status", "enabled", "visibility")
    search_fields = ("name", "display_name", "description", "command", "url")
    autocomplete_fields = ("owner", "team")
    health_fields = ("status", "last_error", "last_ok_at", "last_checked_at", "config_hash")
    live_fields = ("pool_counters", "stderr_tail")
    readonly_fields = (*health_fields, *live_fields, "tool_table", "credentials_filled")
    actions = ("discover_now", "test_connection")
    fieldsets = (
        ("Identity", {"fields": ("name", "display_name", "description")}),
        ("Connection", {"fields": ("transport", "command", "args", "cwd", "url", "timeout")}),
        (
            "OpenAPI (REST API servers)",
            {
                "classes": ("collapse",),
                "fields": ("openapi_source", "openapi_file", "openapi_document", "openapi_filters"),
            },
        ),
        (
            "Secrets",
            {
                "fields": ("env", "headers"),
                "description": "Encrypted at rest; values are never shown.",
            },
        ),
        (
            "Per-user credentials",
            {
                "fields": ("user_variables", "credentials_filled"),
                "description": "Write a value as ${user:NAME} (an env value of a stdio server; a header value or the URL "
                "of a remote one) and each user fills their own NAME on the server's credentials page or with "
                "/api/servers/NAME/my-credentials/. Describe the variables here (optional).",
            },
        ),
        ("Access", {"fields": ("enabled", "visibility", "owner", "team")}),
        ("Health", {"fields": health_fields}),
        (
            "Connection pool",
            {
                "fields": live_fields,
                "description": "Live, from the worker that holds the connection.",
            },
        ),
        ("Tools", {"fields": ("tool_table",)}),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[McpServer]:
        return super().get_queryset(request).annotate(tool_count=Count("tools"))

    def get_form(
        self,
        request: HttpRequest,
        obj: McpServer | None = None,
        change: bool = False,
        **kwargs: Any,
    ):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.may_define_stdio = may_touch_stdio(request.user)
        return form

    def has_change_permission(self, request: HttpRequest, obj: McpServer | None = None) -> bool:
        # Without the stdio permission a stdio server is read-only (still viewable with `view`).
        return super().has_change_permission(request, obj) and not self._stdio_locked(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: McpServer | None = None) -> bool:
        return super().has_delete_permission(request, obj) and not self._stdio_locked(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[McpServer]) -> None:
        # The bulk "delete selected" action asks has_delete_permission without a row: check them here.
        if (
            not may_touch_stdio(request.user)
            and queryset.filter(transport=McpServer.Transport.STDIO).exists()
        ):
            raise PermissionDenied(
                "Deleting stdio servers needs the 'manage stdio servers' permission."
            )
        super().delete_queryset(request, queryset)

    def _stdio_locked(self, request: HttpRequest, obj: McpServer | None) -> bool:
        return (
            obj is not None
            and obj.transport == McpServer.Transport.STDIO
            and not may_touch_stdio(request.user)
        )

    @method_decorator(sensitive_post_parameters("env", "headers"))
    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any):
        # Error reports (500 mails, Sentry) must not carry the secrets an admin just typed.
        return super().changeform_view(request, *args, **kwargs)

    def save_model(self, request: HttpRequest, obj: McpServer, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        tasks.discover_if_due(servers=[obj], user=request.user)
        if obj.discovery_due:  # after the discovery (in-process) or its enqueueing (a worker)
            transaction.on_commit(lambda: self._say_discovery_outcome(request, obj))

    def _say_discovery_outcome(self, request: HttpRequest, server: McpServer) -> None:
        server = McpServer.objects.annotate(tool_count=Count("tools")).get(pk=server.pk)
        if server.status == McpServer.Status.UNKNOWN:
            self.message_user(
                request,
                f"{server.name}: being discovered; its tools and health show here in a moment.",
            )
        elif server.status == McpServer.Status.DOWN:
            self.message_user(request, f"{server.name}: down: {server.last_error}", messages.ERROR)
        else:
            self.message_user(
                request, f"{server.name}: {server.status}, {server.tool_count} tool(s) discovered."
            )

    def get_fieldsets(self, request: HttpRequest, obj: McpServer | None = None):
        # A server not yet saved has no health, pool state or tools to show.
        return self.fieldsets if obj else self.fieldsets[:-3]

    @admin.action(description="Discover now", permissions=("change",))
    def discover_now(self, request: HttpRequest, queryset: QuerySet[McpServer]) -> None:
        for server in queryset:
            outcome = operations.discover_now(server=server, user=request.user)
            self.message_user(
                request, str(outcome), messages.SUCCESS if outcome.ok else messages.ERROR
            )

    @admin.action(description="Test connection", permissions=("change",))
    def test_connection(self, request: HttpRequest, queryset: QuerySet[McpServer]) -> None:
        levels = {"healthy": messages.SUCCESS, "degraded": messages.WARNING, "down": messages.ERROR}
        for server in queryset:
            verdict = operations.check_health(server=server, user=request.user)
            level = (
                messages.WARNING
                if verdict.skipped
                else levels.get(verdict.status, messages.WARNING)
            )
            self.message_user(request, str(verdict), level)

    @admin.display(description="filled by")
    def credentials_filled(self, server: McpServer) -> str:
        """Who filled which variable (names only; values are never read here)."""
        variables = server.user_variable_list()
        if not server.pk or not variables:
            return "No ${user:NAME} variables."
        filled = list(
            server.user_credentials.values_list("names", flat=True)
        )  # apps.credentials, by relation
        url = (
            reverse("admin:credentials_usercredential_changelist")
            + f"?server__id__exact={server.pk}"
        )
        rows = format_html_join(
            "",
            "<li><code>{}</code> ({}): {} user(s)</li>",
            ((v.name, v.used_in, sum(v.name in names for names in filled)) for v in variables),
        )
        return format_html('<ul>{}</ul><a href="{}">See who filled what</a>', rows, url)

    @admin.display(description="pool counters")
    def pool_counters(self, server: McpServer) -> str:
        live = _live_state(server)
        if live.error:
            return f"unavailable: {live.error}"
        stats = live.stats
        rows = format_html_join(
            "",
            "<tr><th>{}</th><td>{}</td></tr>",
            (
                ("state", stats.state),
                ("open sessions", stats.open_sessions),
                ("live processes", stats.live_processes),
                ("calls in flight", stats.inflight),
                ("calls", stats.calls),
                ("restarts", stats.restarts),
                ("failures", stats.failures),
                ("circuit", stats.circuit),
                ("last failure", stats.last_error or "-"),
                ("held by", ", ".join(stats.workers) or "-"),
            ),
        )
        return format_html('<table class="pool-counters"><tbody>{}</tbody></table>', rows)

    @admin.display(description="stderr (most recent last)")
    def stderr_tail(self, server: McpServer) -> str:
        live = _live_state(server)
        if live.error:
            return f"unavailable: {live.error}"
        return format_html('<pre class="stderr-tail">{}</pre>', live.stderr) if live.stderr else "-"

    @admin.display(description="tools", ordering="tool_count")
    def tool_count(self, server: McpServer) -> int:
        return server.tool_count

    @admin.display(description="last error")
    def short_last_error(self, server: McpServer) -> str:
        return truncatechars(server.last_error, 80)

    @admin.display(description="tools")
    def tool_table(self, server: McpServer) -> str:
        # A table, not an inline: an inline posts fields per tool, and big servers would pass
        # DATA_UPLOAD_MAX_NUMBER_FIELDS on every save of the server.
        tools = server.tools.all()[:TOOL_TABLE_ROWS]
        rows = format_html_join(
            "",
            '<tr><td><a href="{}">{}</a></td><td>{}</td><td>{}</td></tr>',
            (
                (
                    reverse("admin:catalog_tool_change", args=[tool.pk]),
                    tool.name,
                    "yes" if tool.available else "no",
                    tool.token_estimate,
                )
                for tool in tools
            ),
        )
        url = reverse("admin:catalog_tool_changelist") + f"?server__id__exact={server.pk}"
        return format_html(
            '<p><a href="{}">All {} tools</a></p><table><thead><tr><th>name</th><th>available</th>'
            "<th>tokens</th></tr></thead><tbody>{}</tbody></table>",
            url,
            server.tool_count,
            rows,
        )


def _live_state(server: McpServer) -> operations.LiveState:
    # Asked once per page: both read-only fields render from the same answer.
    if not hasattr(server, "_live_state"):
        server._live_state = operations.live_state(server_name=server.name)
    return server._live_state


class CatalogItemAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_filter = (("server", admin.RelatedOnlyFieldListFilter), "available")
    list_select_related = ("server",)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).select_related("server")


@admin.register(Tool)
class ToolAdmin(CatalogItemAdmin):
    list_display = ("name", "server", "available", "token_estimate", "last_seen_at")
    # Also what the endpoint inline's autocomplete searches.
    search_fields = ("name", "title", "description", "server__name")
    fields = (
        "server",
        "name",
        "title",
        "description",
        "available",
        "token_estimate",
        "input_schema_json",
        "output_schema_json",
        "annotations_json",
        "first_seen_at",
        "last_seen_at",
    )
    readonly_fields = fields

    @admin.display(description="input schema")
    def input_schema_json(self, tool: Tool) -> str:
        return pretty_json(tool.input_schema)

    @admin.display(description="output schema")
    def output_schema_json(self, tool: Tool) -> str:
        return pretty_json(tool.output_schema)

    @admin.display(description="annotations")
    def annotations_json(self, tool: Tool) -> str:
        return pretty_json(tool.annotations)


@admin.register(Resource)
class ResourceAdmin(CatalogItemAdmin):
    list_display = ("uri", "name", "server", "mime_type", "available")
    search_fields = ("uri", "name", "title", "description")
    fields = (
        "server",
        "uri",
        "name",
        "title",
        "description",
        "mime_type",
        "size",
        "available",
        "annotations_json",
        "first_seen_at",
        "last_seen_at",
    )
    readonly_fields = fields

    @admin.display(description="annotations")
    def annotations_json(self, resource: Resource) -> str:
        return pretty_json(resource.annotations)


@admin.register(ResourceTemplate)
class ResourceTemplateAdmin(CatalogItemAdmin):
    list_display = ("uri_template", "name", "server", "mime_type", "available")
    search_fields = ("uri_template", "name", "title", "description")
    fields = (
        "server",
        "uri_template",
        "name",
        "title",
        "description",
        "mime_type",
        "available",
        "annotations_json",
        "first_seen_at",
        "last_seen_at",
    )
    readonly_fields = fields

    @admin.display(description="annotations")
    def annotations_json(self, template: ResourceTemplate) -> str:
        return pretty_json(template.annotations)


@admin.register(Prompt)
class PromptAdmin(CatalogItemAdmin):
    list_display = ("name", "server", "available")
    search_fields = ("name", "title", "description")
    fields = (
        "server",
        "name",
        "title",
        "description",
        "available",
        "arguments_json",
        "first_seen_at",
        "last_seen_at",
    )
    readonly_fields = fields

    @admin.display(description="arguments")
    def arguments_json(self, prompt: Prompt) -> str:
        return pretty_json(prompt.arguments)
