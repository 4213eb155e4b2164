"""`resources/subscribe` through the hub: the backend is asked, and its updates reach every session.

A session's subscription is recorded per (server, backend URI) in shared state (a Redis set of
session ids, or memory when embedded) and sent on to the backend through the pool. The backend's
`notifications/resources/updated` reaches the pool's notification hook: in production the pool
workers publish it on their events channel, which every web process hears; embedded, the
in-process pool calls `on_backend_notification`. One process claims each update per session,
stores it in the session's GET stream (apps/gateway/resume.py) and wakes whichever process holds
that stream: a session hears each update once, and a stream that was down gets it on resuming.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import defaultdict
from typing import Any

from django.conf import settings

from apps.core import hotstate
from apps.gateway import jsonrpc, resume
from apps.gateway.mailbox import mailbox
from apps.gateway.streams import STORED_MESSAGE, session_group

logger = logging.getLogger(__name__)

UPDATED = "notifications/resources/updated"
PREFIX = "mcphub:gw:rs:"
CLAIM_PREFIX = "mcphub:gw:rsc:"
CLAIM_MS = 1000
_memory: dict[str, set[str]] = defaultdict(set)


def _key(server: str, uri: str) -> str:
    return f"{PREFIX}{server}\x00{uri}"


async def subscribe(*, server: str, spec: Any, uri: str, session_id: str) -> None:
    """Record the session's subscription, then ask the backend (idempotent: safe to ask again)."""
    from apps.connections.default import get_pool

    client = hotstate.async_redis()
    if client is None:
        _memory[_key(server, uri)].add(session_id)
    else:
        async with client.pipeline(transaction=False) as pipe:
            pipe.sadd(_key(server, uri), session_id)
            pipe.expire(_key(server, uri), settings.MCPHUB_SESSION_TTL)
            await pipe.execute()
    await get_pool().subscribe_resource(spec, uri)


async def unsubscribe(*, server: str, uri: str, session_id: str) -> None:
    # The backend stays subscribed: other sessions may still want the updates, and those nobody
    # wants are dropped here.
    client = hotstate.async_redis()
    if client is None:
        _memory[_key(server, uri)].discard(session_id)
    else:
        await client.srem(_key(server, uri), session_id)


async def relay(server: str, notification: dict[str, Any]) -> int:
    """Store a backend's resources/updated in each subscribed session's GET stream and wake the
    process holding that stream, if any (a session without one gets it when it resumes)."""
    uri = str((notification.get("params") or {}).get("uri", ""))
    client = hotstate.async_redis()
    if client is None:
        sessions = set(_memory.get(_key(server, uri), ()))
    else:
        sessions = {raw.decode() for raw in await client.smembers(_key(server, uri))}
    data = jsonrpc.dumps(jsonrpc.notification(UPDATED, {"uri": uri}))
    delivered = 0
    for session_id in sessions:
        if await _claim(client, session_id, uri):
            event = await resume.append(resume.get_stream_id(session_id), data)
            await mailbox().publish(
                session_group(session_id), {"type": STORED_MESSAGE, "id": event.id, "data": data}
            )
            delivered += 1
    return delivered


async def _claim(client: Any, session_id: str, uri: str) -> bool:
    """Every web process hears each update: the first to claim it delivers it. Two updates of one
    URI within CLAIM_MS reach a session once — harmless, as an update says only "read it again"."""
    if client is None:
        return True
    return bool(await client.set(f"{CLAIM_PREFIX}{session_id}\x00{uri}", 1, nx=True, px=CLAIM_MS))


async def on_backend_notification(server: str, notification: Any) -> None:
    """The in-process pool's hook (embedded): the catalog's (list_changed) and ours (resources/updated)."""
    from apps.catalog.watch import on_backend_notification as catalog_hook

    await catalog_hook(server, notification)
    data = (
        notification
        if isinstance(notification, dict)
        else notification.model_dump(by_alias=True, mode="json", exclude_none=True)
    )
    if data.get("method") == UPDATED:
        await relay(server, data)


_listening: set[asyncio.AbstractEventLoop] = set()


async def listen_for_updates() -> None:
    """Production: this web process hears the pool workers' backend notifications (once per loop)."""
    loop = asyncio.get_running_loop()
    if loop in _listening or hotstate.async_redis() is None:
        return
    _listening.add(loop)
    loop.create_task(_listen_forever(), name="mcphub-resource-updates")


async def _listen_forever() -> None:
    from apps.connections.default import pool_settings
    from apps.connections.worker import DEFAULT_PREFIX, events_channel

    channel = events_channel((pool_settings()[1] or {}).get("redis_prefix", DEFAULT_PREFIX))
    while True:
        try:
            pubsub = hotstate.async_redis().pubsub(ignore_subscribe_messages=True)
            await pubsub.subscribe(channel)
            try:
                async for message in pubsub.listen():
                    await _handle(message.get("data"))
            finally:
                await pubsub.aclose()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # boundary: Redis restarts; keep listening
            logger.warning("resource updates listener lost Redis (%s); reconnecting", exc)
            await asyncio.sleep(0.5)


async def _handle(raw: Any) -> None:
    if not isinstance(raw, (bytes, str)) or b"resources/updated" not in (
        raw if isinstance(raw, bytes) else raw.encode()
    ):
        return  # most events are list_changed or logging: skip the parse
    data = json.loads(raw)
    notification = data.get("n") or {}
    if notification.get("method") == UPDATED:
        await relay(data.get("s", ""), notification)
