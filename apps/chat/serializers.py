from __future__ import annotations

from rest_framework import serializers

from apps.chat.models import Conversation, Message
from apps.core import nul
from apps.core.serializers import ModelSerializer, Serializer
from apps.llm.models import Provider
from apps.llm.selectors import providers_for
from apps.toolsets.models import Endpoint


class ConversationSerializer(ModelSerializer):
    """Every field optional on create: the user's default provider (its default model) and endpoint."""

    provider = serializers.PrimaryKeyRelatedField(
        queryset=Provider.objects.none(), required=False, allow_null=True
    )
    endpoint = nul.SlugRelatedField(
        slug_field="slug", queryset=Endpoint.objects.none(), required=False, allow_null=True
    )
    running = serializers.BooleanField(
        read_only=True, default=False, help_text="Whether a turn runs now."
    )

    class Meta:
        model = Conversation
        fields = [
            "id",
            "title",
            "provider",
            "model",
            "endpoint",
            "running",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_at", "updated_at"]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        request = self.context.get("request")
        user = request.user if request is not None else None
        self.fields["provider"].queryset = providers_for(user)
        signed_in = user is not None and user.is_authenticated
        self.fields["endpoint"].queryset = (
            Endpoint.objects.filter(owner=user) if signed_in else Endpoint.objects.none()
        )


class MessageSerializer(ModelSerializer):
    class Meta:
        model = Message
        fields = [
            "id",
            "turn",
            "role",
            "text",
            "reasoning",
            "finish_reason",
            "tool_calls",
            "tool_call_id",
            "tool_name",
            "is_error",
            "result",
            "input_tokens",
            "output_tokens",
            "duration_ms",
            "created_at",
        ]
        read_only_fields = fields


class NewMessageSerializer(Serializer):
    text = serializers.CharField(max_length=100_000, trim_whitespace=False)


class TurnStartedSerializer(Serializer):
    turn = serializers.UUIDField()
    status = serializers.CharField()
