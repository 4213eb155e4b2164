"""Permission-scoped reads of the catalog."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from apps.catalog.models import McpServer, Tool


def visible_servers(user) -> QuerySet[McpServer]:
    """Servers `user` may see: all for staff; else global, their teams', and their own private ones."""
    servers = McpServer.objects.all()
    if user.is_staff:
        return servers
    return servers.filter(
        Q(visibility=McpServer.Visibility.GLOBAL)
        | Q(visibility=McpServer.Visibility.TEAM, team__memberships__user=user)
        | Q(visibility=McpServer.Visibility.PRIVATE, owner=user)
    ).distinct()


def visible_tools(user) -> QuerySet[Tool]:
    return Tool.objects.filter(server__in=visible_servers(user)).select_related("server")
