"""Errors the pool raises, each with a stable `kind` so it survives the Redis wire.

A backend's own JSON-RPC error (unknown tool, bad params) is not wrapped: it stays an
`mcp.MCPError` with its code, so the gateway can pass it on unchanged.
"""

from __future__ import annotations


class PoolError(Exception):
    """Base class: something went wrong reaching a backend, not inside it."""

    kind = "internal"

    def __init__(self, server: str, message: str) -> None:
        super().__init__(message)
        self.server = server
        self.message = message


class ServerUnavailable(PoolError):
    """The pool refuses to try right now (circuit open, pool full, shutting down)."""

    kind = "unavailable"


class HubUnavailable(ServerUnavailable):
    """The hub itself could not hand the call to a backend (its Redis link is down, no pool worker
    is running yet): the call reached no backend, so trying again is safe."""

    kind = "hub_unavailable"


class ServerStartFailed(PoolError):
    """Spawning, connecting or the handshake failed."""

    kind = "start_failed"


class ServerCrashed(PoolError):
    """The backend died (or the connection dropped) while a call was in flight."""

    kind = "crashed"


class WorkerLost(ServerCrashed):
    """The pool worker running the call stopped answering (no heartbeat) after it had read the
    call: the call may or may not have run. Callers that wait may send a read-only call again."""

    kind = "worker_lost"


class CallTimeout(PoolError, TimeoutError):
    """The call did not finish within its timeout; the backend was sent notifications/cancelled."""

    kind = "timeout"


ERROR_KINDS: dict[str, type[PoolError]] = {
    cls.kind: cls
    for cls in (
        PoolError,
        ServerUnavailable,
        HubUnavailable,
        ServerStartFailed,
        ServerCrashed,
        WorkerLost,
        CallTimeout,
    )
}
