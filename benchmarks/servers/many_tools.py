"""An MCP backend with many generated tools over Streamable HTTP: `python many_tools.py PORT [COUNT]`.

The benchmark compares one backend listing COUNT tools directly with the hub listing the same
tool definitions from its catalog (`tool_defs` is shared, so both answers have the same shape).
"""

from __future__ import annotations

import sys
from typing import Any


def tool_defs(count: int = 1000) -> list[dict[str, Any]]:
    """Deterministic tool definitions of a realistic size (~300 bytes of JSON each)."""
    return [
        {
            "name": f"tool_{i:04d}",
            "description": f"Generated tool number {i}: looks up records matching a query and returns at most `limit` of them.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for"},
                    "limit": {
                        "type": "integer",
                        "description": "Maximum number of records",
                        "default": 10,
                    },
                },
                "required": ["query"],
            },
        }
        for i in range(count)
    ]


def main() -> None:
    import mcp_types as types
    import uvicorn
    from mcp.server.lowlevel import Server

    port = int(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    tools = [
        types.Tool(name=d["name"], description=d["description"], input_schema=d["inputSchema"])
        for d in tool_defs(count)
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        text = str((params.arguments or {}).get("query", ""))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    server = Server("many-tools", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
