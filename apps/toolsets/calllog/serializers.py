"""API shapes of usage: the query it takes and the counts, error rates and percentiles it returns."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.serializers import Serializer
from apps.toolsets.calllog.selectors import BUCKETS, WINDOWS


class UsageQuerySerializer(Serializer):
    window = serializers.ChoiceField(
        choices=list(WINDOWS), default="24h", help_text="How far back to count."
    )
    bucket = serializers.ChoiceField(
        choices=list(BUCKETS),
        required=False,
        help_text="Chart resolution (default: hour for 24h, else day).",
    )
    server = serializers.CharField(
        max_length=40,
        required=False,
        default="",
        allow_blank=True,
        help_text="Only this server's calls.",
    )
    tool = serializers.CharField(
        max_length=255,
        required=False,
        default="",
        allow_blank=True,
        help_text="Only calls of this tool name.",
    )
    endpoint = serializers.CharField(
        max_length=64,
        required=False,
        default="",
        allow_blank=True,
        help_text="Only this endpoint's calls.",
    )
    user = serializers.CharField(
        max_length=150,
        required=False,
        default="",
        allow_blank=True,
        help_text="Staff: only this user's calls.",
    )


class StatsSerializer(Serializer):
    calls = serializers.IntegerField()
    errors = serializers.IntegerField()
    error_rate = serializers.FloatField(help_text="errors / calls, 0 to 1.")
    p50_ms = serializers.FloatField(
        allow_null=True, help_text="Median duration in ms (null without calls)."
    )
    p95_ms = serializers.FloatField(allow_null=True)


class BucketSerializer(StatsSerializer):
    start = serializers.DateTimeField()


class ServerUsageSerializer(StatsSerializer):
    server = serializers.CharField()
    series = serializers.ListField(child=serializers.IntegerField(), help_text="Calls per bucket.")


class ToolUsageSerializer(ServerUsageSerializer):
    tool = serializers.CharField()


class SamplingRowSerializer(Serializer):
    user = serializers.CharField(help_text="Empty when the user was deleted.")
    endpoint = serializers.CharField(help_text="The endpoint's slug; empty when it was deleted.")
    server = serializers.CharField()
    model = serializers.CharField()
    requests = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()


class SamplingTotalsSerializer(Serializer):
    requests = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    rows = SamplingRowSerializer(many=True)


class UsageSerializer(Serializer):
    window = serializers.CharField(source="window.key")
    bucket = serializers.ChoiceField(choices=list(BUCKETS))
    since = serializers.DateTimeField(help_text="Start of the first bucket.")
    until = serializers.DateTimeField()
    sampled = serializers.BooleanField(
        help_text="True: percentiles come from an even sample of the calls."
    )
    totals = StatsSerializer()
    buckets = BucketSerializer(many=True)
    servers = ServerUsageSerializer(many=True)
    tools = ToolUsageSerializer(many=True)
    sampling = SamplingTotalsSerializer(
        help_text="Tokens of the users' own models spent answering backends' sampling during "
        "gateway calls in the window (per user, endpoint, server, model; not narrowed by tool)."
    )
