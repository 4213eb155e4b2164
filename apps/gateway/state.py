"""MCP session state shared by every web process (Redis), or kept in memory when embedded.

Web processes hold nothing a session needs between requests: a session's negotiated version,
client capabilities, log level and subscriptions live here, so any process serves any request.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import weakref
from dataclasses import asdict, dataclass, field
from typing import Any

from django.conf import settings

from apps.connections.resp import RespClient, RespError
from apps.core import hotstate
from apps.toolsets.events import endpoint_version_key

SESSION_PREFIX = "mcphub:gw:s:"
RATE_PREFIX = "mcphub:gw:r:"


@dataclass
class Session:
    id: str
    endpoint_id: int
    user_id: int
    protocol_version: str
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    client_info: dict[str, Any] = field(default_factory=dict)
    log_level: str | None = None
    subscriptions: list[str] = field(default_factory=list)
    transport: str = "streamable_http"
    # Dynamic endpoints: the tools this session loaded (exposed name → when), see apps.discovery.loading.
    loaded: dict[str, float] = field(default_factory=dict)

    @classmethod
    def new(cls, **fields: Any) -> Session:
        return cls(id=secrets.token_urlsafe(24), **fields)

    def dumps(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def loads(cls, raw: str | bytes) -> Session:
        return cls(**json.loads(raw))


@dataclass(frozen=True)
class Snapshot:
    """What one request needs from shared state, fetched in a single round trip."""

    session: Session | None
    endpoint_version: object
    retry_after: int | None


def _ttl() -> int:
    return settings.MCPHUB_SESSION_TTL


def _window() -> tuple[str, int]:
    number, left = hotstate.window(60)
    return str(number), left


# One EVALSHA instead of a pipeline of four commands: the same reads and writes in one round trip.
_SNAPSHOT_LUA = """
local version = redis.call('GET', KEYS[1])
local session = false
if KEYS[2] ~= '' then session = redis.call('GETEX', KEYS[2], 'EX', ARGV[1]) end
local count = 0
if KEYS[3] ~= '' then
  count = redis.call('INCR', KEYS[3])
  redis.call('EXPIRE', KEYS[3], 61, 'NX')
end
return {version, session, count}
"""
_SNAPSHOT_SHA = hashlib.sha1(_SNAPSHOT_LUA.encode()).hexdigest()
# The snapshot goes over the pool's lean RESP client (apps/connections/resp.py), not redis-py: the
# commands of one event-loop tick leave in one write, and the client side is a hiredis pack and
# parse instead of redis-py's pool checkout, packing and callbacks (redis-py was ~19 % of the
# production web process's CPU under load, py-spy). `benchmarks/gateway.py --quick --modes prod
# --baseline <checkout before>`, both hubs interleaved, load 9-12 on 2 cores: web CPU per call
# 1.79 / 1.96 ms (→ stdio / → HTTP) against redis-py's 2.17 / 2.43 ms.
_resp_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, RespClient] = (
    weakref.WeakKeyDictionary()
)


def _resp() -> RespClient:
    loop = asyncio.get_running_loop()
    client = _resp_clients.get(loop)
    if client is None:
        client = _resp_clients[loop] = RespClient(settings.REDIS_URL, connect_timeout=2.0)
    return client


async def _eval_snapshot(keys: list[str], ttl: int) -> list[Any]:
    client = _resp()
    args = (len(keys), *keys, ttl)
    fresh = client._conn is None or client._conn.closed
    try:
        try:
            return await client.call("EVALSHA", _SNAPSHOT_SHA, *args)
        except RespError as exc:
            if exc.code != "NOSCRIPT":
                raise
            return await client.call("EVAL", _SNAPSHOT_LUA, *args)  # loads it for next time
    except ConnectionError:
        if fresh:
            raise
        # After a Redis restart the open connection is dead until the loop notices: one retry on
        # a new connection, as redis-py's own retry did (a second failure is an outage: 503).
        return await client.call("EVAL", _SNAPSHOT_LUA, *args)


async def snapshot(
    *, session_id: str | None, endpoint_id: int, rate_key: str, limit: int
) -> Snapshot:
    """Session, endpoint version and this request's rate-limit verdict (`limit` per minute; 0 = none),
    in one round trip."""
    window, retry_after = _window()
    if not settings.REDIS_URL:
        # The version from the database: a shell's change shows on the very next request.
        version = await hotstate.read_counter(endpoint_version_key(endpoint_id))
        return _memory_snapshot(
            session_id, version, f"{RATE_PREFIX}{rate_key}:{window}", limit, retry_after
        )
    keys = [
        endpoint_version_key(endpoint_id),
        SESSION_PREFIX + session_id if session_id else "",
        f"{RATE_PREFIX}{rate_key}:{window}" if limit else "",
    ]
    version, raw, count = await _eval_snapshot(keys, _ttl())
    session = Session.loads(raw) if raw else None
    return Snapshot(session, version, retry_after if limit and count > limit else None)


def _memory_snapshot(
    session_id: str | None, version: int | None, rate_key: str, limit: int, retry_after: int
) -> Snapshot:
    store = hotstate.memory
    raw = store.get(SESSION_PREFIX + session_id) if session_id else None
    if raw is not None:
        store.set(SESSION_PREFIX + session_id, raw, _ttl())
    count = store.incr(rate_key, ttl=61) if limit else 0
    session = Session.loads(raw) if raw else None
    return Snapshot(session, version, retry_after if limit and count > limit else None)


async def save_session(session: Session) -> None:
    client = hotstate.async_redis()
    if client is None:
        hotstate.memory.set(SESSION_PREFIX + session.id, session.dumps(), _ttl())
    else:
        await client.set(SESSION_PREFIX + session.id, session.dumps(), ex=_ttl())


async def load_session(session_id: str) -> Session | None:
    client = hotstate.async_redis()
    raw = (
        hotstate.memory.get(SESSION_PREFIX + session_id)
        if client is None
        else await client.get(SESSION_PREFIX + session_id)
    )
    return Session.loads(raw) if raw else None


async def delete_session(session_id: str) -> bool:
    client = hotstate.async_redis()
    if client is None:
        return hotstate.memory.delete(SESSION_PREFIX + session_id)
    return bool(await client.delete(SESSION_PREFIX + session_id))


def count_sessions() -> int:
    """MCP sessions open now (not yet deleted or expired), for the metrics; sync, one SCAN."""
    client = hotstate.sync_redis()
    if client is None:
        return hotstate.memory.count(SESSION_PREFIX)
    return sum(1 for _ in client.scan_iter(match=SESSION_PREFIX + "*", count=1000))
