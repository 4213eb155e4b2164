"""Upstream OAuth, the reads: which OAuth backends a user may connect, and how each stands."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from apps.catalog.models import McpServer
from apps.catalog.selectors import visible_servers
from apps.credentials.upstream_models import UpstreamOAuthGrant


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
    servers = list(visible_servers(user).filter(oauth=True, enabled=True).exclude(transport=McpServer.Transport.STDIO))
    grants = {g.server_id: g for g in UpstreamOAuthGrant.objects.filter(user=user, server__in=servers)}
    return [_connection(server, grants.get(server.pk)) for server in servers]


def _connection(server: McpServer, grant: UpstreamOAuthGrant | None) -> Connection:
    if grant is None:
        return Connection(server, "not_connected")
    state = "reconnect" if grant.broken else "connected"
    return Connection(server, state, grant.created_at, grant.expires_at, grant.scope, grant.problem)


def connectable_server(user: Any, name: str) -> McpServer | None:
    """A server the user may connect: visible to them, remote, and marked as requiring OAuth."""
    return visible_servers(user).filter(name=name, oauth=True).exclude(transport=McpServer.Transport.STDIO).first()
