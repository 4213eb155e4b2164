"""The MCP client connection pool: a library layer fed plain `ServerSpec`s, no models.

Public API (import from the submodules, or lazily from here):
`ServerSpec`, `PoolAPI` (the interface of both pools), `Pool`, `PoolOptions`, `RemotePool`,
`PoolWorker`, `get_pool`, `run_with_pool`, `Discovery`, `Relay`, and the errors in
`apps.connections.errors`.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "ServerSpec": "apps.connections.specs",
    "PoolAPI": "apps.connections.contract",
    "Pool": "apps.connections.pool",
    "PoolOptions": "apps.connections.pool",
    "RemotePool": "apps.connections.remote",
    "PoolWorker": "apps.connections.worker",
    "get_pool": "apps.connections.default",
    "run_with_pool": "apps.connections.default",
    "Discovery": "apps.connections.listing",
    "Relay": "apps.connections.hooks",
}


def __getattr__(name: str) -> Any:
    # Lazy: Django imports this package at startup; the SDK costs ~1.5 s to import.
    if name not in _EXPORTS:
        raise AttributeError(name)
    return getattr(import_module(_EXPORTS[name]), name)
