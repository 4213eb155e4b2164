"""The hub's own URL elicitation (MCP 2025-11-25): a call that needs something only the user can
give — their credentials for a server, or an upstream OAuth connection not made or broken — is
answered with `URLElicitationRequiredError` (-32042) naming the hub's page for it, when the client
declared URL elicitation (others keep the isError result that says the same in words).

Which session waits for which server is kept in hot state (Redis, or this process's memory
embedded) for an hour; when the user's credentials for that server change and the server's spec
for them is complete, every waiting session gets `notifications/elicitation/complete`.
"""

from __future__ import annotations

import uuid
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from apps.core import hotstate
from apps.credentials.errors import CredentialsMissing
from apps.gateway import jsonrpc
from apps.gateway.state import Session
from apps.gateway.streams import SESSION_MESSAGE, session_group
from apps.toolsets.calls import AskUser, ToolError

URL_ELICITATION_REQUIRED = -32042
COMPLETE = "notifications/elicitation/complete"
PREFIX = "mcphub:gw:elicit:"
TTL = 3600
_memory: dict[str, dict[str, str]] = {}  # embedded: key → {elicitation id: session id}


def asker(user_id: int, session: Session | None) -> AskUser | None:
    """What turns a call's missing credentials into a URL elicitation, if the client takes one."""
    wanted = session.client_capabilities.get("elicitation") if session else None
    if session is None or not isinstance(wanted, dict) or not isinstance(wanted.get("url"), dict):
        return None

    async def ask(missing: CredentialsMissing) -> ToolError:
        elicitation_id = uuid.uuid4().hex
        await _remember(_key(user_id, missing.server), elicitation_id, session.id)
        return ToolError(
            URL_ELICITATION_REQUIRED,
            missing.message,
            {
                "elicitations": [
                    {
                        "mode": "url",
                        "elicitationId": elicitation_id,
                        "url": missing.fill_at,
                        "message": missing.message,
                    }
                ]
            },
        )

    return ask


def _key(user_id: int, server: str) -> str:
    return f"{PREFIX}{user_id}:{server}"


async def _remember(key: str, elicitation_id: str, session_id: str) -> None:
    client = hotstate.async_redis()
    if client is None:
        _memory.setdefault(key, {})[elicitation_id] = session_id
        return
    async with client.pipeline(transaction=False) as pipe:
        pipe.hset(key, elicitation_id, session_id)
        pipe.expire(key, TTL)
        await pipe.execute()


def _take(key: str) -> dict[str, str]:
    client = hotstate.sync_redis()
    if client is None:
        return _memory.pop(key, {})
    with client.pipeline() as pipe:
        pipe.hgetall(key)
        pipe.delete(key)
        pending, _ = pipe.execute()
    return {k.decode(): v.decode() for k, v in pending.items()}


def credentials_changed(sender: Any, *, user_id: int, server_id: int, **_: Any) -> None:
    """Receiver of `credentials_changed` (the user's values or OAuth grant for a server)."""
    transaction.on_commit(lambda: _complete(user_id, server_id))


def _complete(user_id: int, server_id: int) -> None:
    """If the server's spec is now complete for the user, the sessions waiting on it hear that
    their elicitation is complete."""
    from apps.catalog.models import McpServer
    from apps.credentials.selectors import spec_for_user

    server = McpServer.objects.filter(pk=server_id).first()
    if server is None:
        return
    try:
        spec_for_user(server, user_id)
    except CredentialsMissing:
        return  # still something to fill: the elicitation goes on
    layer = get_channel_layer()
    for elicitation_id, session_id in _take(_key(user_id, server.name)).items():
        group = session_group(session_id)
        message = jsonrpc.notification(COMPLETE, {"elicitationId": elicitation_id})
        async_to_sync(layer.group_send)(
            group, {"type": SESSION_MESSAGE, "message": message, "group": group}
        )
