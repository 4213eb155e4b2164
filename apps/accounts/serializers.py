"""API shapes of tokens and teams; the raw token value appears only in the create response."""

from __future__ import annotations

from rest_framework import serializers

from apps.accounts.models import AccessToken, Membership, Team, TokenScope
from apps.core.serializers import ModelSerializer, Serializer


class AccessTokenSerializer(ModelSerializer):
    endpoint = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    is_active = serializers.BooleanField(read_only=True)

    class Meta:
        model = AccessToken
        fields = [
            "id",
            "name",
            "prefix",
            "scope",
            "endpoint",
            "created_at",
            "expires_at",
            "last_used_at",
            "revoked_at",
            "is_active",
        ]
        read_only_fields = fields


class AccessTokenCreateSerializer(Serializer):
    name = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    # Resolved against the caller's own endpoints by the view.
    endpoint = serializers.SlugField(max_length=64, required=False, allow_null=True, default=None)
    scope = serializers.ChoiceField(
        choices=TokenScope.choices,
        required=False,
        allow_null=True,
        default=None,
        help_text="mcp (MCP endpoints only; the default when `endpoint` is given), api_read, api_write, or full. "
        "A token can only create tokens within its own scope.",
    )
    expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)


class CreatedAccessTokenSerializer(AccessTokenSerializer):
    token = serializers.CharField(
        read_only=True, help_text="The raw token: shown this once, never again."
    )

    class Meta(AccessTokenSerializer.Meta):
        fields = [*AccessTokenSerializer.Meta.fields, "token"]
        read_only_fields = fields


class MemberSerializer(ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["username", "role"]
        read_only_fields = fields


class TeamSerializer(ModelSerializer):
    members = MemberSerializer(source="memberships", many=True, read_only=True)

    class Meta:
        model = Team
        fields = ["id", "name", "slug", "members", "created_at"]
        read_only_fields = ["id", "members", "created_at"]
