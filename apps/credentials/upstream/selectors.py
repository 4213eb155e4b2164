"""Upstream OAuth, the reads: which OAuth backends a user may connect, and how each stands."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from apps.catalog.models import McpServer
from apps.catalog.selectors import visible_servers
from apps.credentials.upstream.models import UpstreamOAuthGrant


@dataclass(frozen=True)
class Connection:
    """One OAuth backend as a user sees it: never a token, only whether and since when."""

    server: McpServer
    state: str  # "connected", "reconnect" or "not_connected"
    connected_at: datetime | None = None
    expires_at: datetime | None = None
    scope: str = ""
    problem: str = ""


def connections_for(user: Any) -> list[Connection]:
    servers = list(
        visible_servers(user)
        .filter(oauth=True, enabled=True)
        .exclude(transport=McpServer.Transport.STDIO)
    )
    grants = {
        g.server_id: g for g in UpstreamOAuthGrant.objects.filter(user=user, server__in=servers)
    }
    return [_connection(server, grants.get(server.pk)) for server in servers]


def _connection(server: McpServer, grant: UpstreamOAuthGrant | None) -> Connection:
    if grant is None:
        return Connection(server, "not_connected")
    state = "reconnect" if grant.broken else "connected"
    return Connection(server, state, grant.created_at, grant.expires_at, grant.scope, grant.problem)


def connectable_server(user: Any, name: str) -> McpServer | None:
    """A server the user may connect: visible to them, remote, and marked as requiring OAuth."""
    return (
        visible_servers(user)
        .filter(name=name, oauth=True)
        .exclude(transport=McpServer.Transport.STDIO)
        .first()
    )


def staff_with_grants(server: McpServer) -> list[Any]:
    """Staff users with a working grant for `server`: whose sign-in discovery and health checks may use."""
    grants = UpstreamOAuthGrant.objects.filter(
        server=server, broken=False, user__is_staff=True, user__is_active=True
    )
    return [g.user for g in grants.select_related("user").order_by("-updated_at")]


def refresh_deadline(server_ids: list[int], user_id: int) -> datetime | None:
    """The soonest moment one of the user's grants for these servers is due for a refresh."""
    grants = UpstreamOAuthGrant.objects.filter(
        server_id__in=server_ids, user_id=user_id, broken=False, expires_at__isnull=False
    )
    moments = [grant.refresh_at for grant in grants]
    return min(moments) if moments else None
