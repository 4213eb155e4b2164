"""The hub's own MCP client side (its connection pool) as a conformance-suite client.

    conformance client --command "python tests/scripts/conformance_client.py" --scenario NAME

The suite starts a scenario server and runs this with its URL as the last argument: the pool
connects to it as to any Streamable HTTP backend, lists its tools and calls each with arguments
made from its input schema; a backend's elicitation is accepted with the schema's defaults, as the
chat page's form starts from them (apps/chat/host.py, static/js/host.js).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")
os.environ.setdefault("SECRET_KEY", "conformance-client")
os.environ.setdefault("MCPHUB_ENCRYPTION_KEYS", "Y29uZm9ybWFuY2UtY2xpZW50LWtleS0zMmJ5dGVzLi4=")
os.environ.setdefault("MCPHUB_OUTBOUND_ALLOW", "127.0.0.1,localhost")

import django  # noqa: E402

django.setup()

import mcp_types as types  # noqa: E402

from apps.connections.hooks import Relay  # noqa: E402
from apps.connections.pool import Pool  # noqa: E402
from apps.connections.specs import ServerSpec  # noqa: E402

SAMPLE = {"string": "test", "integer": 1, "number": 1, "boolean": True}


def arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """A value for each required property (its default, else a plain one of its type)."""
    properties = schema.get("properties") or {}
    return {
        name: properties[name].get("default", SAMPLE.get(properties[name].get("type"), "test"))
        for name in schema.get("required") or []
        if name in properties
    }


async def accept_with_defaults(params: types.ElicitRequestParams) -> types.ElicitResult:
    schema = params.requested_schema if hasattr(params, "requested_schema") else {}
    schema = schema if isinstance(schema, dict) else schema.model_dump(by_alias=True)
    content = {
        name: spec["default"]
        for name, spec in (schema.get("properties") or {}).items()
        if "default" in spec
    }
    return types.ElicitResult(action="accept", content=content)


async def main(url: str) -> int:
    spec = ServerSpec("conformance", transport="streamable_http", url=url)
    async with Pool() as pool:
        tools = await pool.list_tools(spec)
        for tool in tools:
            schema = tool.input_schema if hasattr(tool, "input_schema") else tool["inputSchema"]
            name = tool.name if hasattr(tool, "name") else tool["name"]
            await pool.call_tool(
                spec,
                name,
                arguments(schema if isinstance(schema, dict) else {}),
                relay=Relay(elicitation=accept_with_defaults),
                raw=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1])))
