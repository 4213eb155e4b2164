"""API shapes of MCP servers. Secrets (env values, header values) are write-only: reads show keys only."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied

from apps.accounts.models import Team, User
from apps.catalog import openapi
from apps.catalog.models import McpServer
from apps.catalog.permissions import ServerWriteRefused, writable_attrs
from apps.core import nul
from apps.core.serializers import ModelSerializer


class ServerSerializer(ModelSerializer):
    env = serializers.DictField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        write_only=True,
        help_text="Environment of a stdio server. Write-only: replaces the stored mapping when sent.",
    )
    headers = serializers.DictField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        write_only=True,
        help_text="HTTP headers of a remote server. Write-only: replaces the stored mapping when sent.",
    )
    args = serializers.ListField(child=serializers.CharField(allow_blank=True), required=False)
    env_keys = serializers.SerializerMethodField(
        help_text="Names of the stored environment variables."
    )
    header_keys = serializers.SerializerMethodField(help_text="Names of the stored headers.")
    owner = nul.SlugRelatedField(
        slug_field="username", queryset=User.objects.all(), required=False, allow_null=True
    )
    team = nul.SlugRelatedField(
        slug_field="slug", queryset=Team.objects.all(), required=False, allow_null=True
    )
    timeout = serializers.IntegerField(
        min_value=1, max_value=86400, required=False, help_text="Seconds per call."
    )
    tool_count = serializers.IntegerField(read_only=True, default=0)
    user_variables = serializers.JSONField(
        required=False,
        help_text="The ${user:NAME} placeholders the config uses (each user fills their own values at "
        "/api/servers/<name>/my-credentials/). Write: labels and help, "
        '[{"name": "GITHUB_TOKEN", "label": "GitHub token", "help_text": "…", "required": true}]; '
        "read: every variable used, with where it goes (`used_in`).",
    )

    openapi_document = serializers.CharField(
        required=False,
        allow_blank=True,
        write_only=True,
        trim_whitespace=False,
        help_text="OpenAPI servers: the document's text (JSON or YAML), when not fetched from "
        "`openapi_source`. Write-only (GET /api/servers/<name>/openapi/ shows it).",
    )

    class Meta:
        model = McpServer
        fields = [
            "id",
            "name",
            "display_name",
            "description",
            "transport",
            "command",
            "args",
            "env",
            "env_keys",
            "cwd",
            "url",
            "headers",
            "header_keys",
            "user_variables",
            "openapi_source",
            "openapi_document",
            "openapi_filters",
            "enabled",
            "timeout",
            "visibility",
            "owner",
            "team",
            "status",
            "last_error",
            "last_ok_at",
            "last_checked_at",
            "oauth",
            "tool_count",
            "created_at",
            "updated_at",
        ]
        read_only_fields = [
            "status",
            "last_error",
            "last_ok_at",
            "last_checked_at",
            "oauth",
            "created_at",
            "updated_at",
        ]
        extra_kwargs = {
            "oauth": {
                "help_text": "The backend requires OAuth: each user connects it with their own account."
            }
        }

    def to_representation(self, server: McpServer) -> dict:
        data = super().to_representation(server)
        data["user_variables"] = [variable.__dict__ for variable in server.user_variable_list()]
        return data

    def get_env_keys(self, server: McpServer) -> list[str]:
        return sorted(server.env)

    def get_header_keys(self, server: McpServer) -> list[str]:
        return sorted(server.headers)

    def validate(self, attrs: dict) -> dict:
        """Run the model's own rules (stdio needs a command, team visibility needs a team, …)."""
        attrs = self._scoped(attrs)
        candidate = McpServer(**{**self._current(), **attrs})
        if candidate.transport == McpServer.Transport.OPENAPI and (
            self.instance is None
            or {"transport", "openapi_source", "openapi_document"} & set(attrs)
        ):
            attrs = self._openapi(candidate, attrs)
            candidate = McpServer(**{**self._current(), **attrs})
        try:
            candidate.clean()
            candidate.validate_constraints(exclude={"name"})
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from None
        return attrs

    def _openapi(self, candidate: McpServer, attrs: dict) -> dict:
        """The document fetched (or the text given) bundled and validated, the base URL filled."""
        values = {
            "openapi_source": candidate.openapi_source,
            "openapi_document": attrs.get("openapi_document", "")
            if not candidate.openapi_source
            else "",
            "url": candidate.url,
        }
        try:
            return {**attrs, **openapi.complete(values, public_only=candidate.public_only)}
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from None

    def _scoped(self, attrs: dict) -> dict:
        """Writers without model permissions get remote servers private to themselves."""
        try:
            return writable_attrs(self.context["request"].user, attrs, instance=self.instance)
        except ServerWriteRefused as exc:
            raise PermissionDenied(str(exc)) from None

    def _current(self) -> dict:
        if self.instance is None:
            return {}
        names = [
            f for f in self.Meta.fields if f not in ("env_keys", "header_keys", "tool_count", "id")
        ]
        return {f: getattr(self.instance, f) for f in names if f not in self.Meta.read_only_fields}
