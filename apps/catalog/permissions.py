"""Who may define, change, delete and operate MCP servers: Django's model permissions, plus one
of our own for stdio servers, whose command runs on the worker host (code execution), which only
superusers hold unless an admin grants it. Staff status alone grants nothing here, as in the admin.

Without model permissions a user may still, when `MCPHUB_USERS_MAY_ADD_SERVERS` is on, add remote
servers private to themselves and change or delete those.
"""

from __future__ import annotations

from django.conf import settings

from apps.catalog.models import McpServer

STDIO = "catalog.manage_stdio_server"
VIEW_ALL = "catalog.view_mcpserver"
ADD = "catalog.add_mcpserver"
CHANGE = "catalog.change_mcpserver"
DELETE = "catalog.delete_mcpserver"


def users_may_add_servers() -> bool:
    return bool(getattr(settings, "MCPHUB_USERS_MAY_ADD_SERVERS", False))


def sees_every_server(user) -> bool:
    return user.is_authenticated and user.has_perm(VIEW_ALL)


def may_touch_stdio(user) -> bool:
    return user.is_authenticated and user.has_perm(STDIO)


def may_add_server(user) -> bool:
    """Whether `user` may add any server at all (what kind is decided by `writable_attrs`)."""
    return user.is_authenticated and (user.has_perm(ADD) or users_may_add_servers())


def owns_privately(user, server: McpServer) -> bool:
    return server.visibility == McpServer.Visibility.PRIVATE and server.owner_id == user.pk


def may_write_server(user, server: McpServer, *, permission: str = CHANGE) -> bool:
    """Change (or, with permission=DELETE, delete) this existing server; tests and discovery
    count as changes: they start the server's process and rewrite its catalog."""
    if server.transport == McpServer.Transport.STDIO and not may_touch_stdio(user):
        return False
    return user.has_perm(permission) or owns_privately(user, server)


class ServerWriteRefused(PermissionError):
    pass


def writable_attrs(user, attrs: dict, *, instance: McpServer | None) -> dict:
    """The attributes `user` may write, forced private to them when they hold no model permission."""
    transport = attrs.get(
        "transport", instance.transport if instance else McpServer.Transport.STDIO
    )
    stdio_involved = McpServer.Transport.STDIO in (
        transport,
        instance.transport if instance else None,
    )
    if stdio_involved and not may_touch_stdio(user):
        raise ServerWriteRefused(
            "Defining or changing a stdio server needs the 'manage stdio servers' permission: it runs a command on the hub's host."
        )
    if user.has_perm(CHANGE if instance else ADD):
        return attrs
    return {**attrs, "visibility": McpServer.Visibility.PRIVATE, "owner": user, "team": None}
