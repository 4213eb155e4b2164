"""A stdio MCP server with one subscribable resource, `note://board`, and a `write` tool that
changes it: a client subscribed to the note gets `notifications/resources/updated`.

    python tests/servers/notes.py
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPDeprecationWarning

warnings.filterwarnings(
    "ignore", category=MCPDeprecationWarning
)  # resources/subscribe is deprecated in 2026-07-28

URI = "note://board"
board = {"text": "empty", "subscribed": False}


async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    return types.ListResourcesResult(
        resources=[types.Resource(uri=URI, name="board", mime_type="text/plain")]
    )


async def read_resource(
    ctx: Any, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=URI, mime_type="text/plain", text=board["text"])]
    )


async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    board["subscribed"] = str(params.uri) == URI
    return types.EmptyResult()


async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    board["subscribed"] = False
    return types.EmptyResult()


WRITE = types.Tool(
    name="write",
    description="Write the note",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
)


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[WRITE])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    board["text"] = str((params.arguments or {}).get("text", ""))
    if board["subscribed"]:
        await ctx.session.send_resource_updated(URI)
    return types.CallToolResult(content=[types.TextContent(type="text", text="written")])


def build_server() -> Server:
    return Server(
        "notes",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
    )


async def main() -> None:
    server = build_server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
