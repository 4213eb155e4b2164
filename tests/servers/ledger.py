"""Test MCP server with a tool that changes something: `record` appends its entry to the file
LEDGER_FILE the moment a call arrives (then takes `seconds`), so a test counts every call the
backend received, repeats included. `python ledger.py` (stdio)."""

import os

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer

server = MCPServer("ledger", version="1.0", log_level="WARNING")
# Not read-only, and says it destroys nothing: the `destructive` approval policy runs it unasked.
WRITES = types.ToolAnnotations(read_only_hint=False, destructive_hint=False)


def _append(entry: str) -> None:
    with open(os.environ["LEDGER_FILE"], "a") as ledger:
        ledger.write(entry + "\n")


@server.tool(annotations=WRITES)
async def record(entry: str, seconds: float = 0.0) -> str:
    """Append an entry to the ledger."""
    _append(entry)  # first, as the call arrives: a call cut short is still counted
    await anyio.sleep(seconds)
    return f"recorded {entry}"


if __name__ == "__main__":
    server.run("stdio")
