"""A stdio MCP server standing in for a database, one tool per way a server may annotate (or not):

- `list_tables`: `readOnlyHint: true`;
- `add_row`: `destructiveHint: false` (it changes data, but only adds);
- `truncate`: `destructiveHint: true`;
- `drop_all`: no annotations at all, as most servers' tools have: by MCP's defaults it may destroy.

Each answer says what the tables hold afterwards, so a test sees whether a call really ran.

    python tests/servers/tables.py
"""

import mcp_types as types
from mcp.server.mcpserver import MCPServer

server = MCPServer("tables", version="1.0", instructions="A tiny database.", log_level="WARNING")
tables = {"users": 3, "orders": 7}


def _state() -> str:
    return ", ".join(f"{name}={rows}" for name, rows in sorted(tables.items())) or "no tables"


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
def list_tables() -> str:
    """The tables and their row counts."""
    return _state()


@server.tool(annotations=types.ToolAnnotations(destructive_hint=False))
def add_row(table: str) -> str:
    """Add a row to a table (creating it)."""
    tables[table] = tables.get(table, 0) + 1
    return _state()


@server.tool(annotations=types.ToolAnnotations(destructive_hint=True))
def truncate(table: str) -> str:
    """Delete every row of a table."""
    tables[table] = 0
    return _state()


@server.tool()
def drop_all() -> str:
    """Drop every table."""
    tables.clear()
    return _state()


if __name__ == "__main__":
    server.run("stdio")
