"""REST API: `POST /api/endpoints/<slug>/suggest/ {"task", "budget"?, "limit"?}` → the tools for a task."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.discovery.suggest import suggest_tools
from apps.toolsets.selectors import visible_endpoints


class SuggestRequestSerializer(serializers.Serializer):
    task = serializers.CharField(max_length=4000, help_text="What the tools are for, in words")
    budget = serializers.IntegerField(required=False, min_value=1, max_value=10_000_000, help_text="Tokens (default: the endpoint's budget)")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100, default=10)


class SuggestionSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="server.tool: what enabled-tools and presets take")
    name = serializers.CharField()
    server = serializers.CharField()
    description = serializers.CharField()
    tokens = serializers.IntegerField()
    score = serializers.FloatField()
    enabled = serializers.BooleanField()
    reason = serializers.CharField()


class SuggestionsSerializer(serializers.Serializer):
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
        result = suggest_tools(endpoint=endpoint, task=data.validated_data["task"], budget=budget, limit=data.validated_data["limit"])
        return Response(SuggestionsSerializer(result).data)
