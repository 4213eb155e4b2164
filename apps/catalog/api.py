"""REST API for MCP servers: everyone lists what they may see; writes follow Django's model
permissions (see apps/catalog/permissions.py), stdio servers need their own permission.
"""

from __future__ import annotations

import django_filters
from django.db.models import Count, QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from apps.catalog import operations, tasks
from apps.catalog import permissions as server_permissions
from apps.catalog.models import McpServer
from apps.catalog.selectors import visible_servers
from apps.catalog.serializers import ServerSerializer
from apps.core.serializers import Serializer


class ServerPermission(permissions.BasePermission):
    """Django model permissions on servers (add, change, delete; test and discover count as
    change), the stdio permission for stdio servers, and a user's own private servers."""

    message = "You do not have permission to change this server."

    def has_permission(self, request: Request, view) -> bool:
        if request.method in permissions.SAFE_METHODS or getattr(view, "action", None) != "create":
            return True  # reads are scoped by the queryset; writes to a row are checked on the row
        return server_permissions.may_add_server(request.user)

    def has_object_permission(self, request: Request, view, obj: McpServer) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        wanted = (
            server_permissions.DELETE if view.action == "destroy" else server_permissions.CHANGE
        )
        return server_permissions.may_write_server(request.user, obj, permission=wanted)


class HealthSerializer(Serializer):
    status = serializers.ChoiceField(choices=McpServer.Status.choices)
    round_trip_ms = serializers.FloatField(allow_null=True)
    reason = serializers.CharField()
    skipped = serializers.BooleanField(
        help_text="Nothing was pinged (a server with per-user credentials and no values to use); `status` is the stored one."
    )


class DiscoveryOutcomeSerializer(Serializer):
    ok = serializers.BooleanField()
    summary = serializers.SerializerMethodField()
    counts = serializers.SerializerMethodField()
    error = serializers.CharField()

    def get_summary(self, outcome: operations.DiscoveryOutcome) -> str:
        return str(outcome)

    def get_counts(self, outcome: operations.DiscoveryOutcome) -> dict[str, int]:
        return dict(outcome.report.counts) if outcome.report else {}


class LiveStateSerializer(Serializer):
    stderr = serializers.CharField()
    stats = serializers.SerializerMethodField()
    error = serializers.CharField()

    def get_stats(self, state: operations.LiveState) -> dict:
        return state.stats.as_dict()


class ServerFilter(django_filters.FilterSet):
    search = django_filters.CharFilter(
        field_name="name", lookup_expr="icontains", label="Name contains"
    )

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
        tasks.discover_if_due(servers=[serializer.save()], user=self.request.user)

    def perform_update(self, serializer: ServerSerializer) -> None:
        tasks.discover_if_due(servers=[serializer.save()], user=self.request.user)

    @extend_schema(request=None, responses=HealthSerializer)
    @action(detail=True, methods=["post"])
    def test(self, request: Request, name: str) -> Response:
        """Test the connection now: ping through the pool, record and return the verdict."""
        verdict = operations.check_health(server=self.get_object(), user=request.user)
        return Response(HealthSerializer(verdict).data)

    @extend_schema(request=None, responses=DiscoveryOutcomeSerializer)
    @action(detail=True, methods=["post"])
    def discover(self, request: Request, name: str) -> Response:
        """Discover now: list everything the server offers and update the catalog."""
        outcome = operations.discover_now(server=self.get_object(), user=request.user)
        return Response(DiscoveryOutcomeSerializer(outcome).data)

    @extend_schema(responses=LiveStateSerializer)
    @action(detail=True, methods=["get"])
    def live(self, request: Request, name: str) -> Response:
        """The backend's recent stderr and its pool counters (never starts a backend); for those
        who may change the server, as stderr can carry what the server prints about its config."""
        if not server_permissions.may_write_server(request.user, self.get_object()):
            raise PermissionDenied("You do not have permission to see this server's live state.")
        return Response(
            LiveStateSerializer(operations.live_state(server_name=self.get_object().name)).data
        )
