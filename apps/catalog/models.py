"""MCP servers and what they offer (tools, resources, resource templates, prompts)."""

from __future__ import annotations

import hashlib
import json

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

from apps.catalog import openapi, uservars
from apps.connections.specs import ServerSpec
from apps.core.fields import EncryptedJSONField
from apps.core.models import TimeStampedModel
from apps.core.outbound import literal_problem

# Server names prefix tool names (`server__tool`, at most 64 characters in all), so keep them short
# and within the MCP tool-name alphabet; no dots, so `server.tool` keys split unambiguously.
SERVER_NAME_RE = r"^[a-z0-9][a-z0-9_-]{0,39}$"
server_name_validator = RegexValidator(
    SERVER_NAME_RE,
    "Use 1-40 lowercase letters, digits, '-' or '_', starting with a letter or digit.",
)

# A built-in server is answered by the hub itself, by the handler registered under its name
# (apps.toolsets.calls.register_builtin; the `hub` server's tools are apps/gateway/hub_tools.py):
# nothing connects to it, and health checks and discovery leave it alone.
HUB_SERVER = "hub"  # the built-in server of the hub's own tools
# Names only built-in servers may hold: an imported or added server named so would take their place.
BUILTIN_NAMES = frozenset({HUB_SERVER})

# The fields that define how to connect: a change to any of them changes config_hash.
CONNECTION_FIELDS = (
    "transport",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "timeout",
    "openapi_document",
    "openapi_filters",
)


class McpServer(TimeStampedModel):
    class Transport(models.TextChoices):
        STDIO = "stdio", "stdio"
        STREAMABLE_HTTP = "streamable_http", "Streamable HTTP"
        SSE = "sse", "SSE (legacy)"
        OPENAPI = "openapi", "REST API (OpenAPI)"

    class Visibility(models.TextChoices):
        GLOBAL = "global", "Everyone"
        TEAM = "team", "One team"
        PRIVATE = "private", "Only the owner"

    class Status(models.TextChoices):
        UNKNOWN = "unknown"
        HEALTHY = "healthy"
        DEGRADED = "degraded"
        DOWN = "down"

    name = models.CharField(max_length=40, unique=True, validators=[server_name_validator])
    display_name = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    transport = models.CharField(max_length=20, choices=Transport.choices, default=Transport.STDIO)
    command = models.CharField(max_length=1024, blank=True)
    args = models.JSONField(default=list, blank=True)
    env = EncryptedJSONField(default=dict, blank=True)
    cwd = models.CharField(max_length=1024, blank=True)
    url = models.URLField(max_length=2048, blank=True)
    headers = EncryptedJSONField(default=dict, blank=True)
    user_variables = models.JSONField(
        default=list,
        blank=True,
        help_text="Labels and help for the ${user:NAME} placeholders in env, header values or the URL: "
        '[{"name": "GITHUB_TOKEN", "label": "GitHub token", "help_text": "…", "required": true}]. '
        "Each user fills their own values; a placeholder not described here is required.",
    )
    openapi_source = models.URLField(
        max_length=2048,
        blank=True,
        help_text="OpenAPI servers: where the document is fetched from (again on Discover and on "
        "schedule). Leave empty for an uploaded document.",
    )
    openapi_document = models.TextField(
        blank=True,
        help_text="OpenAPI servers: the document (OpenAPI 3.0/3.1 or Swagger 2.0, JSON or YAML); "
        "stored validated, with remote $refs inlined.",
    )
    openapi_filters = models.JSONField(
        default=dict,
        blank=True,
        help_text='OpenAPI servers: which operations become tools, {"include": ["tag:pets"], '
        '"exclude": ["method:DELETE", "path:/admin/*", "operation:deletePet"]}.',
    )
    enabled = models.BooleanField(default=True)
    timeout = models.PositiveIntegerField(
        default=30, help_text="Seconds a single call to this server may take."
    )
    visibility = models.CharField(
        max_length=10, choices=Visibility.choices, default=Visibility.GLOBAL
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="mcp_servers",
    )
    team = models.ForeignKey(
        "accounts.Team",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="mcp_servers",
    )
    config_hash = models.CharField(max_length=64, editable=False)
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.UNKNOWN, editable=False
    )
    last_error = models.TextField(blank=True, editable=False)
    last_ok_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_checked_at = models.DateTimeField(null=True, blank=True, editable=False)
    oauth = models.BooleanField(
        default=False,
        editable=False,
        help_text="The backend answered 401 with OAuth resource metadata: each user connects it with their own account.",
    )

    class Meta:
        ordering = ["name"]
        verbose_name = (
            "MCP server"  # "MCP server with this name already exists.", not "mcp server …"
        )
        # A stdio server's command runs on the worker host: only superusers hold this by default.
        permissions = [
            (
                "manage_stdio_server",
                "Can define or change stdio servers (runs commands on the hub's host)",
            )
        ]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(transport="stdio") | ~models.Q(command=""),
                name="stdio_server_has_command",
            ),
            models.CheckConstraint(
                condition=models.Q(transport="stdio") | ~models.Q(url=""),
                name="remote_server_has_url",
            ),
            models.CheckConstraint(
                condition=models.Q(timeout__gte=1), name="server_timeout_positive"
            ),
        ]

    def __str__(self) -> str:
        return self.display_name or self.name

    def compute_config_hash(self) -> str:
        config = {field: getattr(self, field) for field in CONNECTION_FIELDS}
        return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()

    @classmethod
    def from_db(cls, db, field_names, values):
        server = super().from_db(db, field_names, values)
        # A row read with .only()/.defer() lacks them; touching one here would reload it (recursively).
        if not {"config_hash", "enabled"} & server.get_deferred_fields():
            server._stored = (server.config_hash, server.enabled)
        return server

    def save(self, *args, **kwargs) -> None:
        # Derived state kept in step with the row, so any writer (admin, API, import) hot-reloads.
        self.config_hash = self.compute_config_hash()
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and set(update_fields) & set(CONNECTION_FIELDS):
            kwargs["update_fields"] = {*update_fields, "config_hash"}
        super().save(*args, **kwargs)
        # New, newly enabled, or connecting differently: what it offers is unknown until discovered.
        self.discovery_due = self.enabled and getattr(self, "_stored", None) != (
            self.config_hash,
            True,
        )
        self._stored = (self.config_hash, self.enabled)

    def to_spec(self) -> ServerSpec:
        """The plain connection recipe the pool understands (secrets decrypted here, in memory only)."""
        return ServerSpec(
            name=self.name,
            transport=self.transport,
            command=self.command,
            args=tuple(self.args),
            env=self.env,
            cwd=self.cwd or None,
            url=self.url,
            headers=self.headers,
            timeout=float(self.timeout),
            public_only=self.public_only,
            openapi=self._openapi_blob(),
        )

    def _openapi_blob(self) -> str:
        if self.transport != self.Transport.OPENAPI or not self.openapi_document:
            return ""
        return openapi.spec_blob(self.openapi_document, self.openapi_filters or {})

    @property
    def public_only(self) -> bool:
        """A user who is not staff chose the URL: the hub reaches it only through the outbound address
        policy (apps/core/outbound.py). Reads the owner (one query unless it was loaded with the row)."""
        return (
            self.transport != self.Transport.STDIO
            and self.owner_id is not None
            and not self.owner.is_staff
        )

    def user_variable_list(self) -> list[uservars.UserVariable]:
        """The `${user:NAME}` variables this server's config uses, with their labels and help."""
        placed = uservars.placements(
            transport=self.transport, env=self.env or {}, headers=self.headers or {}, url=self.url
        )
        return uservars.declared(placed, self.user_variables or [])

    @property
    def is_builtin(self) -> bool:
        """Served by the hub itself (a registered handler answers its calls; nothing connects to
        it). Only the hub writes a row with a reserved name: `clean()` refuses anyone else."""
        return self.name in BUILTIN_NAMES

    @property
    def has_user_variables(self) -> bool:
        return bool(self.user_variable_list())

    def clean(self) -> None:
        errors = {}
        # Only the hub writes a built-in row (hub_tools.ensure_hub_server, without validation):
        # no new row may take a reserved name, and nobody changes how the built-in one connects.
        if self.name in BUILTIN_NAMES and (
            self._state.adding or self.compute_config_hash() != self.config_hash
        ):
            errors["name"] = (
                f"The name “{self.name}” is reserved for the hub's own tools; choose another name."
            )
        if self.transport == self.Transport.STDIO and not self.command:
            errors["command"] = "A stdio server needs a command."
        if self.transport != self.Transport.STDIO and not self.url:
            errors["url"] = "A remote server needs a URL."
        elif self.public_only and (problem := literal_problem(self.url)):
            errors["url"] = (
                problem  # what shows without DNS; the connect-time check catches the rest
            )
        if self.transport == self.Transport.OPENAPI:
            errors.update(self._openapi_problems())
        elif any(str(key).startswith("scheme:") for key in self.headers or {}):
            errors["headers"] = (
                "scheme:NAME holds a credential of an OpenAPI server's security scheme; "
                "this server is not one."
            )
        if self.visibility == self.Visibility.TEAM and self.team_id is None:
            errors["team"] = "Choose the team that may see this server."
        if self.visibility == self.Visibility.PRIVATE and self.owner_id is None:
            errors["owner"] = "A private server needs an owner."
        if not isinstance(self.args, list) or not all(isinstance(a, str) for a in self.args):
            errors["args"] = "Arguments must be a list of strings."
        for field in ("env", "headers"):
            value = getattr(self, field)
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                errors[field] = "Must be a mapping of names to string values."
        if not errors:
            errors.update(self._user_variable_problems())
        if errors:
            raise ValidationError(errors)

    def _openapi_problems(self) -> dict[str, str]:
        errors = {}
        if not self.openapi_document:
            errors["openapi_source"] = (
                "An OpenAPI server needs its document: a URL to fetch it from, or an upload."
            )
        if problem := openapi.filter_problems(self.openapi_filters):
            errors["openapi_filters"] = problem
        return errors

    def _user_variable_problems(self) -> dict[str, str]:
        elsewhere = {"command": self.command, "cwd": self.cwd, "args": " ".join(self.args)}
        if self.transport == self.Transport.STDIO:
            elsewhere["url"] = self.url
        problems = uservars.problems(
            transport=self.transport,
            env=self.env,
            headers=self.headers,
            url=self.url,
            elsewhere=elsewhere,
            metadata=self.user_variables,
        )
        oauth_problems = uservars.oauth_problems(
            server_name=self.name,
            transport=self.transport,
            env=self.env,
            headers=self.headers,
            url=self.url,
            elsewhere=elsewhere,
        )
        return {**oauth_problems, **problems}


class CatalogItem(models.Model):
    """What every discovered item shares: it is marked unavailable, never deleted, when it vanishes."""

    title = models.CharField(max_length=300, blank=True)
    description = models.TextField(blank=True)
    available = models.BooleanField(default=True)
    first_seen_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Tool(CatalogItem):
    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=255)
    input_schema = models.JSONField(default=dict)
    output_schema = models.JSONField(null=True, blank=True)
    annotations = models.JSONField(null=True, blank=True)
    # MCP 2025-11-25 `execution` (e.g. {"taskSupport": "optional"}): set for tools whose
    # task-augmented calls the hub honours (its own runs); absent means "forbidden".
    execution = models.JSONField(null=True, blank=True)
    token_estimate = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["server__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["server", "name"], name="unique_tool_per_server")
        ]

    def __str__(self) -> str:
        return self.key

    @property
    def key(self) -> str:
        """`server.tool`: the stable, human-readable identity used by presets and patterns."""
        return f"{self.server.name}.{self.name}"


class Resource(CatalogItem):
    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="resources")
    uri = models.CharField(max_length=2048)
    name = models.CharField(max_length=255)
    mime_type = models.CharField(max_length=255, blank=True)
    size = models.BigIntegerField(null=True, blank=True)
    annotations = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["server__name", "uri"]
        constraints = [
            models.UniqueConstraint(fields=["server", "uri"], name="unique_resource_per_server")
        ]

    def __str__(self) -> str:
        return f"{self.server.name}: {self.uri}"


class ResourceTemplate(CatalogItem):
    server = models.ForeignKey(
        McpServer, on_delete=models.CASCADE, related_name="resource_templates"
    )
    uri_template = models.CharField(max_length=2048)
    name = models.CharField(max_length=255)
    mime_type = models.CharField(max_length=255, blank=True)
    annotations = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["server__name", "uri_template"]
        constraints = [
            models.UniqueConstraint(
                fields=["server", "uri_template"], name="unique_template_per_server"
            )
        ]

    def __str__(self) -> str:
        return f"{self.server.name}: {self.uri_template}"


class Prompt(CatalogItem):
    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="prompts")
    name = models.CharField(max_length=255)
    arguments = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["server__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["server", "name"], name="unique_prompt_per_server")
        ]

    def __str__(self) -> str:
        return f"{self.server.name}.{self.name}"


class ImportedFile(models.Model):
    """A config file found at start-up and imported (apps/catalog/found_file.py): what it said, and
    each server as the import left it, so later starts change only what nobody changed since."""

    path = models.CharField(max_length=1024, unique=True)
    fingerprint = models.CharField(
        max_length=64, help_text="Of the file's entries as last imported."
    )
    servers = models.JSONField(
        default=dict, help_text="Server name → fingerprint of the server as imported."
    )
    imported_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.path
