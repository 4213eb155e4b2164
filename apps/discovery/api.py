"""REST API: `POST /api/endpoints/<slug>/suggest/ {"task", "budget"?, "limit"?}` → the tools for a
task; `/api/endpoints/<slug>/patterns/` (GET, POST) and `…/patterns/<id>/` (PATCH, DELETE) → activation patterns."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.serializers import ModelSerializer, Serializer
from apps.discovery import services
from apps.discovery.models import ActivationPattern
from apps.discovery.suggest import suggest_tools
from apps.toolsets.selectors import visible_endpoints


class SuggestRequestSerializer(Serializer):
    task = serializers.CharField(max_length=4000, help_text="What the tools are for, in words")
    budget = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=10_000_000,
        help_text="Tokens (default: the endpoint's budget)",
    )
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100, default=10)


class SuggestionSerializer(Serializer):
    key = serializers.CharField(help_text="server.tool: what enabled-tools and presets take")
    name = serializers.CharField()
    server = serializers.CharField()
    description = serializers.CharField()
    tokens = serializers.IntegerField()
    score = serializers.FloatField()
    enabled = serializers.BooleanField()
    reason = serializers.CharField()


class SuggestionsSerializer(Serializer):
    task = serializers.CharField()
    budget = serializers.IntegerField()
    tokens = serializers.IntegerField()
    tools = SuggestionSerializer(many=True)
    left_out = serializers.IntegerField()


class SuggestView(APIView):
    """Which tools for this task? A set that fits the budget, with the reason for each tool.

    Changes nothing: apply it with `PUT enabled-tools` (replace, or merge by adding the current keys)."""

    @extend_schema(request=SuggestRequestSerializer, responses=SuggestionsSerializer)
    def post(self, request: Request, slug: str) -> Response:
        endpoint = get_object_or_404(visible_endpoints(request.user), slug=slug)
        data = SuggestRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        budget = data.validated_data.get("budget") or endpoint.token_budget
        result = suggest_tools(
            endpoint=endpoint,
            task=data.validated_data["task"],
            budget=budget,
            limit=data.validated_data["limit"],
        )
        return Response(SuggestionsSerializer(result).data)


class PatternSerializer(ModelSerializer):
    problem = serializers.CharField(
        read_only=True,
        help_text="Why a pattern saved before patterns ran on RE2 never matches; '' when it is valid",
    )

    class Meta:
        model = ActivationPattern
        fields = ["id", "pattern", "targets", "priority", "created_at", "problem"]
        read_only_fields = ["id", "created_at"]


class PatternsView(APIView):
    """Activation patterns of one endpoint: a regular expression over dynamic sessions' search
    queries and tool calls → tools ('server.tool') or servers ('server.*') to pre-load."""

    @extend_schema(responses=PatternSerializer(many=True))
    def get(self, request: Request, slug: str) -> Response:
        endpoint = get_object_or_404(visible_endpoints(request.user), slug=slug)
        return Response(PatternSerializer(endpoint.activation_patterns.all(), many=True).data)

    @extend_schema(request=PatternSerializer, responses={201: PatternSerializer})
    def post(self, request: Request, slug: str) -> Response:
        endpoint = get_object_or_404(visible_endpoints(request.user), slug=slug)
        data = PatternSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        row = _guarded(services.create_pattern, endpoint=endpoint, **data.validated_data)
        return Response(PatternSerializer(row).data, status=status.HTTP_201_CREATED)


class PatternView(APIView):
    @extend_schema(request=PatternSerializer, responses=PatternSerializer)
    def patch(self, request: Request, slug: str, pk: int) -> Response:
        row = self._row(request, slug, pk)
        data = PatternSerializer(row, data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        return Response(
            PatternSerializer(
                _guarded(services.update_pattern, row=row, **data.validated_data)
            ).data
        )

    @extend_schema(responses={204: None})
    def delete(self, request: Request, slug: str, pk: int) -> Response:
        services.delete_pattern(pattern=self._row(request, slug, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _row(self, request: Request, slug: str, pk: int) -> ActivationPattern:
        endpoint = get_object_or_404(visible_endpoints(request.user), slug=slug)
        return get_object_or_404(endpoint.activation_patterns, pk=pk)


def _guarded(write, **kwargs) -> ActivationPattern:
    try:
        return write(**kwargs)
    except DjangoValidationError as exc:
        raise serializers.ValidationError(exc.message_dict) from None
