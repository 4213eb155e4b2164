"""API shapes of tools (with enabled state), endpoints with their budget, and presets with versions."""

from __future__ import annotations

import re

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.catalog.models import Tool
from apps.core.serializers import ModelSerializer, Serializer
from apps.toolsets.models import Endpoint, Preset, PresetVersion
from apps.toolsets.selectors import endpoint_budget
from apps.toolsets.snippets import client_snippets, endpoint_url

TOOL_KEY_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}\.[^\s/]{1,255}$")


class BudgetSerializer(Serializer):
    used = serializers.IntegerField(help_text="Estimated tokens of the enabled tools.")
    limit = serializers.IntegerField(help_text="The endpoint's token budget.")
    enforced = serializers.BooleanField(help_text="False: going over the budget only warns.")
    over_by = serializers.IntegerField()
    percent = serializers.IntegerField()
    state = serializers.ChoiceField(choices=["ok", "near", "over"])


class ToolSerializer(ModelSerializer):
    server = serializers.CharField(source="server.name", read_only=True)
    key = serializers.CharField(
        read_only=True, help_text="`server.tool`, the identity presets use."
    )
    enabled = serializers.BooleanField(read_only=True, default=False)

    class Meta:
        model = Tool
        fields = [
            "id",
            "key",
            "server",
            "name",
            "title",
            "description",
            "available",
            "token_estimate",
            "enabled",
        ]
        read_only_fields = fields


class ToolDetailSerializer(ToolSerializer):
    class Meta(ToolSerializer.Meta):
        fields = [*ToolSerializer.Meta.fields, "input_schema", "output_schema", "annotations"]
        read_only_fields = fields


class EndpointSerializer(ModelSerializer):
    slug = serializers.RegexField(
        r"^[a-z0-9][a-z0-9-]{2,63}$",
        max_length=64,
        required=False,
        help_text="3-64 lowercase letters, digits or '-'; derived from your username when omitted.",
    )
    url = serializers.SerializerMethodField()
    enabled_count = serializers.SerializerMethodField()
    budget = serializers.SerializerMethodField()

    class Meta:
        model = Endpoint
        fields = [
            "slug",
            "name",
            "url",
            "is_default",
            "naming_strategy",
            "token_budget",
            "budget_enforced",
            "mode",
            "approval",
            "sampling",
            "sampling_max_tokens",
            "roots",
            "enabled_count",
            "budget",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["is_default", "created_at", "updated_at"]

    def get_url(self, endpoint: Endpoint) -> str:
        return endpoint_url(endpoint)

    def get_enabled_count(self, endpoint: Endpoint) -> int:
        return endpoint.tools.count()

    @extend_schema_field(BudgetSerializer)
    def get_budget(self, endpoint: Endpoint) -> dict:
        return BudgetSerializer(endpoint_budget(endpoint)).data

    def validate_slug(self, slug: str) -> str:
        if self.instance is not None and slug != self.instance.slug:
            raise serializers.ValidationError(
                "An endpoint's slug cannot change: clients have its URL."
            )
        if self.instance is None and Endpoint.objects.filter(slug=slug).exists():
            raise serializers.ValidationError("This slug is taken.")
        return slug


class EndpointDetailSerializer(EndpointSerializer):
    snippets = serializers.SerializerMethodField(
        help_text="Client configurations, with YOUR_TOKEN to replace."
    )

    class Meta(EndpointSerializer.Meta):
        fields = [*EndpointSerializer.Meta.fields, "snippets"]

    def get_snippets(self, endpoint: Endpoint) -> dict[str, str]:
        return client_snippets(endpoint)


class EnabledToolsSerializer(Serializer):
    budget = BudgetSerializer()
    tools = ToolSerializer(many=True)


class ReplaceToolsSerializer(Serializer):
    tools = serializers.ListField(
        child=serializers.CharField(max_length=300),
        max_length=10000,
        help_text="`server.tool` keys to enable.",
    )


class ToggleSerializer(Serializer):
    enabled = serializers.BooleanField()


class ToggleResultSerializer(Serializer):
    tool = ToolSerializer()
    budget = BudgetSerializer()


class ServerToggleResultSerializer(Serializer):
    server = serializers.CharField()
    changed = serializers.IntegerField()
    budget = BudgetSerializer()


class LoadPresetSerializer(Serializer):
    preset = serializers.IntegerField(min_value=1)
    version = serializers.IntegerField(min_value=1, required=False, allow_null=True, default=None)
    mode = serializers.ChoiceField(choices=["replace", "merge"], default="replace")


class LoadResultSerializer(Serializer):
    loaded = serializers.ListField(child=serializers.CharField())
    missing = serializers.ListField(
        child=serializers.CharField(), help_text="Keys no visible tool matches."
    )
    budget = BudgetSerializer()


def validate_tool_keys(keys: list[str]) -> list[str]:
    bad = [key for key in keys if not TOOL_KEY_RE.match(key)]
    if bad:
        raise serializers.ValidationError(f"Not `server.tool` keys: {', '.join(bad[:5])}.")
    return sorted(set(keys))


class PresetVersionSerializer(ModelSerializer):
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None)

    class Meta:
        model = PresetVersion
        fields = ["number", "tool_keys", "note", "created_by", "created_at"]
        read_only_fields = fields


def _latest(preset: Preset) -> PresetVersion | None:
    """The newest version, from prefetched versions when the list view prefetched them."""
    return max(preset.versions.all(), key=lambda version: version.number, default=None)


class PresetSerializer(ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True, default=None)
    team = serializers.CharField(source="team.slug", read_only=True, default=None)
    version = serializers.SerializerMethodField()
    tool_keys = serializers.ListField(
        child=serializers.CharField(max_length=300),
        max_length=10000,
        required=False,
        help_text="`server.tool` keys; a change saves a new version.",
    )
    note = serializers.CharField(max_length=200, required=False, allow_blank=True, write_only=True)
    share_with = serializers.SlugField(
        max_length=50,
        required=False,
        allow_null=True,
        write_only=True,
        help_text="Team slug to share with at creation.",
    )
    from_endpoint = serializers.SlugField(
        max_length=64,
        required=False,
        allow_null=True,
        write_only=True,
        help_text="Take the tool keys from this endpoint's enabled tools.",
    )

    class Meta:
        model = Preset
        fields = [
            "id",
            "name",
            "description",
            "owner",
            "team",
            "visibility",
            "version",
            "tool_keys",
            "note",
            "share_with",
            "from_endpoint",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "owner", "team", "visibility", "created_at", "updated_at"]

    def get_version(self, preset: Preset) -> int | None:
        latest = _latest(preset)
        return latest.number if latest else None

    def to_representation(self, preset: Preset) -> dict:
        data = super().to_representation(preset)
        latest = _latest(preset)
        data["tool_keys"] = latest.tool_keys if latest else []
        return data

    def validate_tool_keys(self, keys: list[str]) -> list[str]:
        return validate_tool_keys(keys)


class ShareSerializer(Serializer):
    team = serializers.SlugField(max_length=50)


class RollbackSerializer(Serializer):
    version = serializers.IntegerField(min_value=1)


class DiffSerializer(Serializer):
    from_version = serializers.IntegerField()
    to_version = serializers.IntegerField()
    added = serializers.ListField(child=serializers.CharField())
    removed = serializers.ListField(child=serializers.CharField())
    unchanged = serializers.ListField(child=serializers.CharField())


class PresetLoadSerializer(Serializer):
    endpoint = serializers.SlugField(max_length=64)
    version = serializers.IntegerField(min_value=1, required=False, allow_null=True, default=None)
    mode = serializers.ChoiceField(choices=["replace", "merge"], default="replace")
