"""What the pool needs to know to reach one MCP server: a frozen, hashable spec."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, Literal

Transport = Literal["stdio", "streamable_http", "sse", "openapi"]
TRANSPORTS: frozenset[str] = frozenset({"stdio", "streamable_http", "sse", "openapi"})
# "legacy" is the initialize handshake every 2024-2025 server speaks and the only era in
# which backends push list_changed notifications spontaneously; "auto" probes 2026-07-28 first.
MODES: frozenset[str] = frozenset({"legacy", "auto"})


def _frozen_mapping(value: Mapping[str, str] | None) -> Mapping[str, str]:
    return MappingProxyType({str(k): str(v) for k, v in (value or {}).items()})


@dataclass(frozen=True, eq=False)
class ServerSpec:
    """A connection recipe; secrets in `env` / `headers` arrive already decrypted.

    `config_hash` covers everything that needs a new connection when it changes;
    `timeout` (per-call default) does not, so editing it never restarts a backend.
    """

    name: str
    transport: Transport = "stdio"
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float | None = None
    mode: str = "legacy"
    # Per-user connections of one shared server ("u42"): part of the pool key and of config_hash,
    # never of the routing, so every partition of a server lives on the same pool worker.
    partition: str = ""
    # The URL was chosen by a user who is not staff: connect only through the outbound address
    # policy the app layer installed (transports/guard.py).
    public_only: bool = False
    # transport "openapi": {"document": …, "include": […], "exclude": […]} as JSON text; `url` is
    # the API's base URL and `headers` its credentials (transports/openapi.py).
    openapi: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", tuple(str(a) for a in self.args))
        object.__setattr__(self, "env", _frozen_mapping(self.env))
        object.__setattr__(self, "headers", _frozen_mapping(self.headers))
        self._validate()

    def _validate(self) -> None:
        if not self.name:
            raise ValueError("a server spec needs a name")
        if self.transport not in TRANSPORTS:
            raise ValueError(f"server {self.name!r}: unknown transport {self.transport!r}")
        if self.transport == "stdio" and not self.command:
            raise ValueError(f"server {self.name!r}: a stdio server needs a command")
        if self.transport != "stdio" and not self.url:
            raise ValueError(f"server {self.name!r}: a {self.transport} server needs a url")
        if self.transport == "openapi" and not self.openapi:
            raise ValueError(f"server {self.name!r}: an openapi server needs its document")
        if self.mode not in MODES:
            raise ValueError(f"server {self.name!r}: mode must be one of {sorted(MODES)}")
        if PARTITION_SEPARATOR in self.name or PARTITION_SEPARATOR in self.partition:
            raise ValueError(
                f"server {self.name!r}: {PARTITION_SEPARATOR!r} may not appear in a name or partition"
            )

    @property
    def key(self) -> str:
        """What the pool keeps one connection per: the name, or `name#partition`."""
        return pool_key(self.name, self.partition)

    def _connection_config(self) -> dict[str, Any]:
        return {
            "transport": self.transport,
            "command": self.command,
            "args": list(self.args),
            "env": dict(sorted(self.env.items())),
            "cwd": self.cwd,
            "url": self.url,
            "headers": dict(sorted(self.headers.items())),
            "mode": self.mode,
            # Only when set, so the hash of every unpartitioned spec stays what it was.
            **({"partition": self.partition} if self.partition else {}),
            **({"public_only": True} if self.public_only else {}),
            **({"openapi": self.openapi} if self.openapi else {}),
        }

    @cached_property
    def config_hash(self) -> str:
        # Once per spec object (the pool compares it on every call); frozen, so it cannot go stale.
        blob = json.dumps(self._connection_config(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:24]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServerSpec):
            return NotImplemented
        return self.to_wire() == other.to_wire()

    def __hash__(self) -> int:
        return hash((self.name, self.config_hash, self.timeout))

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, **self._connection_config(), "timeout": self.timeout}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> ServerSpec:
        return cls(**{**data, "args": tuple(data.get("args") or ())})

    def __repr__(self) -> str:
        # Never print env or header values: they carry secrets.
        target = self.command if self.transport == "stdio" else self.url
        part = f", partition={self.partition!r}" if self.partition else ""
        return (
            f"ServerSpec(name={self.name!r}{part}, transport={self.transport!r}, target={target!r})"
        )


PARTITION_SEPARATOR = "#"


def pool_key(name: str, partition: str = "") -> str:
    return f"{name}{PARTITION_SEPARATOR}{partition}" if partition else name


def server_of(key: str) -> str:
    """The server name of a pool key (`github#u42` → `github`)."""
    return key.partition(PARTITION_SEPARATOR)[0]
