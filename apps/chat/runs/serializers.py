from __future__ import annotations

from rest_framework import serializers

from apps.chat.runs.models import Run, RunStep
from apps.core.serializers import ModelSerializer, Serializer


class StartRunSerializer(Serializer):
    """Tools: `servers` (names; their tools enabled on your endpoint) or a whole `endpoint` (slug);
    neither: every tool of your default endpoint. `model`: one of your providers' names, or a model
    of your default provider."""

    task = serializers.CharField(max_length=100_000, trim_whitespace=False)
    servers = serializers.ListField(
        child=serializers.CharField(max_length=40), required=False, allow_empty=False
    )
    endpoint = serializers.CharField(max_length=64, required=False)
    model = serializers.CharField(max_length=200, required=False, allow_blank=True)
    max_rounds = serializers.IntegerField(required=False, min_value=1, max_value=100_000)
    token_budget = serializers.IntegerField(required=False, min_value=1)
    time_limit_s = serializers.IntegerField(required=False, min_value=1, max_value=30 * 86400)
    resources = serializers.ListField(
        child=serializers.CharField(max_length=2000),
        required=False,
        max_length=10,
        help_text="URIs of your endpoint's resources, read at the start and attached to the task.",
    )

    def validate(self, attrs: dict) -> dict:
        if "servers" in attrs and "endpoint" in attrs:
            raise serializers.ValidationError("Give 'servers' or 'endpoint', not both.")
        return attrs


class ApprovalSerializer(Serializer):
    call_id = serializers.CharField(max_length=200)
    allow = serializers.BooleanField()
    # A sampling request's changes, allowed with them: systemPrompt, messages (each one's text),
    # maxTokens (up to the endpoint's cap), model (one of `editable.models`' values).
    edit = serializers.JSONField(required=False, allow_null=True)


class AnswerSerializer(Serializer):
    """The owner's answer to a backend's question the run waits on (`pending_input`)."""

    id = serializers.CharField(max_length=200)
    action = serializers.ChoiceField(choices=["accept", "decline", "cancel"])
    content = serializers.JSONField(required=False, allow_null=True)


class RunStepSerializer(ModelSerializer):
    class Meta:
        model = RunStep
        fields = [
            "round",
            "text",
            "reasoning",
            "finish_reason",
            "tool_calls",
            "input_tokens",
            "output_tokens",
            "context_chars",
            "model_ms",
            "duration_ms",
            "created_at",
        ]
        read_only_fields = fields


class RunSerializer(ModelSerializer):
    provider = serializers.CharField(source="provider.name", default=None, read_only=True)
    endpoint = serializers.CharField(source="endpoint.slug", default=None, read_only=True)

    class Meta:
        model = Run
        fields = [
            "id",
            "task",
            "provider",
            "model",
            "endpoint",
            "servers",
            "max_rounds",
            "token_budget",
            "time_limit_s",
            "status",
            "pending_approvals",
            "pending_input",
            "answer",
            "error",
            "rounds",
            "input_tokens",
            "output_tokens",
            "elapsed_s",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class RunDetailSerializer(RunSerializer):
    steps = RunStepSerializer(many=True, read_only=True)

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "steps"]
        read_only_fields = fields
