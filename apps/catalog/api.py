"""REST API for MCP servers: everyone lists what they may see; staff define them.

A stdio server runs a command on the worker host, so only staff may create one. When
`MCPHUB_USERS_MAY_ADD_SERVERS` is on, other users may add remote servers private to themselves.
"""

from __future__ import annotations

import django_filters
from django.conf import settings
from django.db.models import Count, QuerySet
from rest_framework import permissions, viewsets
from rest_framework.request import Request

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
