"""Test MCP server that tells whose credentials reached it: `python whoami.py [stdio|http] [PORT]`.

Tool `whoami` answers what this backend received: over stdio the `USER_TOKEN` environment variable
and its process id; over HTTP the `X-User-Token` header and the `key` URL query value of the
request that carried the call. Per-user credential tests check each user's call sees only theirs.
"""

import json
import os
import sys

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("whoami", version="1.0", log_level="WARNING")


# Read-only, and marked so: by MCP's defaults the hub would hold an LLM's call to an unmarked tool.
@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
def whoami(ctx: Context) -> str:
    """What credentials this call arrived with."""
    request = ctx.request_context.request
    if request is None:
        return json.dumps({"token": os.environ.get("USER_TOKEN", ""), "pid": os.getpid()})
    return json.dumps(
        {
            "header": request.headers.get("x-user-token", ""),
            "key": request.query_params.get("key", ""),
        }
    )


if __name__ == "__main__":
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=int(sys.argv[2]),
            stateless_http=True,
            json_response=True,
        )
