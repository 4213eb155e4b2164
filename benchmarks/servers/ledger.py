"""An MCP server over stdio whose one tool has a side effect the benchmark can count: `work(key,
seconds)` appends `key` to the ledger file (argv[1]) as the call arrives, then takes `seconds`.
Not marked read-only: by MCP's defaults it may change data, so running it twice is a duplicate."""

import sys

import anyio
from mcp.server.mcpserver import MCPServer

LEDGER = sys.argv[1]
server = MCPServer("ledger", version="1.0", log_level="WARNING")


@server.tool()
async def work(key: str, seconds: float = 0.0) -> str:
    """Record `key` in the ledger, then work for `seconds`."""
    with open(LEDGER, "a") as ledger:  # noqa: ASYNC230 - one short line, before the call goes on
        ledger.write(key + "\n")
    if seconds:
        await anyio.sleep(seconds)
    return f"done {key}"


if __name__ == "__main__":
    server.run("stdio")
