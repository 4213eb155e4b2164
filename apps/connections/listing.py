"""What a server lists (tools, resources, templates, prompts), fetched in full (every page), in one
serializable value."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import mcp_types as types

# A server whose cursors never end must not hang discovery.
MAX_PAGES = 1000

T = TypeVar("T")


async def collect_pages(
    fetch: Callable[[str | None], Awaitable[Any]], items: Callable[[Any], list[T]]
) -> list[T]:
    """Follow `next_cursor` until the server stops giving one (or repeats one)."""
    collected: list[T] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = await fetch(cursor)
        collected.extend(items(page))
        cursor = page.next_cursor
        if not cursor or cursor in seen:
            break
        seen.add(cursor)
    return collected


def _dump(model: Any) -> Any:
    return (
        model.model_dump(by_alias=True, mode="json", exclude_none=True)
        if model is not None
        else None
    )


@dataclass
class Discovery:
    """A server's identity, capabilities and catalog, as the catalog app persists it."""

    server: str
    config_hash: str
    protocol_version: str | None
    server_info: types.Implementation | None
    capabilities: types.ServerCapabilities | None
    instructions: str | None
    tools: list[types.Tool] = field(default_factory=list)
    resources: list[types.Resource] = field(default_factory=list)
    resource_templates: list[types.ResourceTemplate] = field(default_factory=list)
    prompts: list[types.Prompt] = field(default_factory=list)

    def to_wire(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "config_hash": self.config_hash,
            "protocol_version": self.protocol_version,
            "instructions": self.instructions,
            "server_info": _dump(self.server_info),
            "capabilities": _dump(self.capabilities),
            "tools": [_dump(t) for t in self.tools],
            "resources": [_dump(r) for r in self.resources],
            "resource_templates": [_dump(t) for t in self.resource_templates],
            "prompts": [_dump(p) for p in self.prompts],
        }

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Discovery:
        def opt(model: type[Any], value: Any) -> Any:
            return model.model_validate(value) if value is not None else None

        return cls(
            server=data["server"],
            config_hash=data["config_hash"],
            protocol_version=data.get("protocol_version"),
            instructions=data.get("instructions"),
            server_info=opt(types.Implementation, data.get("server_info")),
            capabilities=opt(types.ServerCapabilities, data.get("capabilities")),
            tools=[types.Tool.model_validate(t) for t in data.get("tools", ())],
            resources=[types.Resource.model_validate(r) for r in data.get("resources", ())],
            resource_templates=[
                types.ResourceTemplate.model_validate(t) for t in data.get("resource_templates", ())
            ],
            prompts=[types.Prompt.model_validate(p) for p in data.get("prompts", ())],
        )
