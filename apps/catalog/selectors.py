"""Permission-scoped reads of the catalog."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from apps.catalog.models import McpServer, Tool
from apps.catalog.permissions import sees_every_server


def visible_servers(user) -> QuerySet[McpServer]:
    """Servers `user` may see: all with the model's view permission (as in the admin); else
    global ones, their teams', and their own private ones."""
    servers = McpServer.objects.all()
    if sees_every_server(user):
        return servers
    return servers.filter(
        Q(visibility=McpServer.Visibility.GLOBAL)
        | Q(visibility=McpServer.Visibility.TEAM, team__memberships__user=user)
        | Q(visibility=McpServer.Visibility.PRIVATE, owner=user)
    ).distinct()


def visible_tools(user) -> QuerySet[Tool]:
    return Tool.objects.filter(server__in=visible_servers(user)).select_related("server")
