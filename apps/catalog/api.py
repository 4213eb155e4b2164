"""REST API for MCP servers: everyone lists what they may see; staff define them.

A stdio server runs a command on the worker host, so only staff may create one. When
`MCPHUB_USERS_MAY_ADD_SERVERS` is on, other users may add remote servers private to themselves.
"""

from __future__ import annotations

import django_filters
from django.conf import settings
from django.db.models import Count, QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.catalog import operations
from apps.catalog.models import McpServer
from apps.catalog.selectors import visible_servers
from apps.catalog.serializers import ServerSerializer


def users_may_add_servers() -> bool:
    return bool(getattr(settings, "MCPHUB_USERS_MAY_ADD_SERVERS", False))


class ServerPermission(permissions.BasePermission):
    message = "Only staff may change servers."

    def has_permission(self, request: Request, view) -> bool:
        if request.method in permissions.SAFE_METHODS or request.user.is_staff:
            return True
        return users_may_add_servers()

    def has_object_permission(self, request: Request, view, obj: McpServer) -> bool:
        if request.method in permissions.SAFE_METHODS or request.user.is_staff:
            return True
        return obj.visibility == McpServer.Visibility.PRIVATE and obj.owner_id == request.user.pk


class HealthSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=McpServer.Status.choices)
    round_trip_ms = serializers.FloatField(allow_null=True)
    reason = serializers.CharField()


class DiscoveryOutcomeSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    summary = serializers.SerializerMethodField()
    counts = serializers.SerializerMethodField()
    error = serializers.CharField()

    def get_summary(self, outcome: operations.DiscoveryOutcome) -> str:
        return str(outcome)

    def get_counts(self, outcome: operations.DiscoveryOutcome) -> dict[str, int]:
        return dict(outcome.report.counts) if outcome.report else {}


class LiveStateSerializer(serializers.Serializer):
    stderr = serializers.CharField()
    stats = serializers.SerializerMethodField()
    error = serializers.CharField()

    def get_stats(self, state: operations.LiveState) -> dict:
        return state.stats.as_dict()


class ServerFilter(django_filters.FilterSet):
    search = django_filters.CharFilter(field_name="name", lookup_expr="icontains", label="Name contains")

    class Meta:
        model = McpServer
        fields = ["search", "transport", "status", "visibility", "enabled"]


class ServerViewSet(viewsets.ModelViewSet):
    queryset = McpServer.objects.none()
    serializer_class = ServerSerializer
    permission_classes = [permissions.IsAuthenticated, ServerPermission]
    filterset_class = ServerFilter
    lookup_field = "name"
    lookup_value_regex = r"[a-z0-9][a-z0-9_-]{0,39}"

    def get_queryset(self) -> QuerySet[McpServer]:
        return (
            visible_servers(self.request.user)
            .select_related("owner", "team")
            .annotate(tool_count=Count("tools", distinct=True))
            .order_by("name")
        )

    def perform_create(self, serializer: ServerSerializer) -> None:
        operations.discover_if_due(servers=[serializer.save()])

    def perform_update(self, serializer: ServerSerializer) -> None:
        operations.discover_if_due(servers=[serializer.save()])

    @extend_schema(request=None, responses=HealthSerializer)
    @action(detail=True, methods=["post"])
    def test(self, request: Request, name: str) -> Response:
        """Test the connection now: ping through the pool, record and return the verdict."""
        verdict = operations.check_health(server=self.get_object())
        return Response(HealthSerializer(verdict).data)

    @extend_schema(request=None, responses=DiscoveryOutcomeSerializer)
    @action(detail=True, methods=["post"])
    def discover(self, request: Request, name: str) -> Response:
        """Discover now: list everything the server offers and update the catalog."""
        outcome = operations.discover_now(server=self.get_object())
        return Response(DiscoveryOutcomeSerializer(outcome).data)

    @extend_schema(responses=LiveStateSerializer)
    @action(detail=True, methods=["get"], permission_classes=[permissions.IsAdminUser])
    def live(self, request: Request, name: str) -> Response:
        """Staff: the backend's recent stderr and its pool counters (never starts a backend)."""
        return Response(LiveStateSerializer(operations.live_state(server_name=self.get_object().name)).data)
