"""API shapes of LLM providers. The API key is write-only: reads say only whether one is stored."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.serializers import ModelSerializer, Serializer
from apps.llm.models import Provider
from apps.llm.services import can_edit


class ProviderSerializer(ModelSerializer):
    api_key = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        trim_whitespace=True,
        style={"input_type": "password"},
        help_text='Write-only. Omit to keep the stored key; "" removes it.',
    )
    has_api_key = serializers.BooleanField(read_only=True, help_text="Whether a key is stored.")
    shared = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Shared with every user (staff only; set on create).",
    )
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    editable = serializers.SerializerMethodField(help_text="Whether you may change or delete it.")

    class Meta:
        model = Provider
        fields = [
            "id",
            "name",
            "kind",
            "base_url",
            "default_model",
            "reasoning_effort",
            "thinking_budget",
            "max_output_tokens",
            "model_traits",
            "api_key",
            "has_api_key",
            "shared",
            "owner",
            "is_default",
            "editable",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["created_at", "updated_at"]

    def to_representation(self, provider: Provider) -> dict:
        data = super().to_representation(provider)
        data["shared"] = provider.is_shared
        return data

    def get_editable(self, provider: Provider) -> bool:
        return can_edit(self.context["request"].user, provider)

    def validate_shared(self, shared: bool) -> bool:
        if self.instance is None:
            return shared
        if "shared" not in self.initial_data:  # a PUT that leaves it out keeps it
            return self.instance.is_shared
        if shared != self.instance.is_shared:
            raise serializers.ValidationError("Sharing is chosen when a provider is created.")
        return shared


class ModelListSerializer(Serializer):
    """The provider's answer, asked live. A provider that fails is an answer too (ok false), not a 5xx."""

    ok = serializers.BooleanField()
    models = serializers.ListField(child=serializers.CharField(), help_text="Model ids, sorted.")
    default_model = serializers.CharField(allow_blank=True)
    error = serializers.CharField(
        allow_blank=True, help_text="The provider's error in plain words, when not ok."
    )
    error_kind = serializers.ChoiceField(
        choices=["", "auth", "quota", "rate_limit", "model", "unavailable", "bad_request", "other"],
        help_text="What kind of error, when not ok.",
    )
