"""Test MCP server built with the SDK: `python echo.py [stdio|http|http-json|http-stateless|https|sse] [PORT]`.

`https` is `http` over TLS: the certificate and key files are ECHO_TLS_CERT and ECHO_TLS_KEY.

Tools cover the pool's features: plain calls, slow calls that record being cancelled,
a call that blocks the event loop (a hung server), a crash, progress, logging,
sampling relayed to the caller and a list_changed notification.
"""

import os
import sys
import time

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

server = MCPServer("echo", version="1.0", instructions="Echoes things back.", log_level="WARNING")
# None of these tools changes anything, and the server says so: by MCP's defaults an unmarked tool
# may destroy data, so the hub would hold every LLM call to it for the user's approval.
READ_ONLY = types.ToolAnnotations(read_only_hint=True)
cancelled = {"count": 0}


@server.tool(annotations=READ_ONLY)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool(annotations=READ_ONLY)
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@server.tool(annotations=READ_ONLY)
async def slow(seconds: float) -> str:
    """Sleep without blocking; counts the times it was cancelled."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        cancelled["count"] += 1
        raise
    return "done"


@server.tool(annotations=READ_ONLY)
def rpc_error(code: int, message: str) -> str:
    """Answer with a JSON-RPC error (not a tool result with isError)."""
    raise MCPError(code=code, message=message, data={"why": "asked to"})


@server.tool(annotations=READ_ONLY)
def header(name: str, ctx: Context) -> str:
    """The value of one HTTP header of this request ("" when absent or not over HTTP)."""
    return (ctx.headers or {}).get(name, "")


@server.tool(annotations=READ_ONLY)
def cancellations() -> int:
    """How many slow calls were cancelled by the client."""
    return cancelled["count"]


@server.tool(annotations=READ_ONLY)
async def block(seconds: float) -> str:
    """Block the whole server's event loop (a hung backend); sync tools would run in a thread."""
    time.sleep(seconds)
    return "unblocked"


@server.tool(annotations=READ_ONLY)
def crash() -> str:
    """Die at once, as a buggy server would."""
    sys.stderr.write("echo: fatal error, exiting\n")
    sys.stderr.flush()
    os._exit(1)


@server.tool(annotations=READ_ONLY)
async def progress(steps: int, ctx: Context) -> str:
    """Report progress `steps` times."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    return "progressed"


@server.tool(annotations=READ_ONLY)
async def log(message: str, ctx: Context) -> str:
    """Send a log notification."""
    await ctx.info(message)
    return "logged"


@server.tool(annotations=READ_ONLY)
async def chatty(count: int, ctx: Context) -> str:
    """Send `count` log notifications during the call, then answer."""
    for i in range(count):
        await ctx.info(f"line {i}")
    return f"said {count}"


@server.tool(annotations=READ_ONLY)
def client_capabilities(ctx: Context) -> dict:
    """The capabilities the client declared at initialize."""
    params = ctx.session.client_params
    return params.capabilities.model_dump(by_alias=True, exclude_none=True) if params else {}


@server.tool(annotations=READ_ONLY)
async def ask(question: str, ctx: Context) -> str:
    """Ask the client's model (sampling) and return its answer."""
    result = await ctx.session.create_message(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=question))],
        max_tokens=50,
    )
    return result.content.text


@server.tool(annotations=READ_ONLY)
async def touch_tools(ctx: Context) -> str:
    """Announce that the tool list changed."""
    await ctx.session.send_tool_list_changed()
    return "announced"


@server.resource("echo://static")
def static_resource() -> str:
    return "static content"


@server.resource("echo://item/{item_id}")
def item(item_id: str) -> str:
    return f"item {item_id}"


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    port = int(sys.argv[2]) if len(sys.argv) > 2 else int(os.environ.get("PORT", "8765"))
    if transport == "stdio":
        server.run("stdio")
    elif transport == "http":
        server.run("streamable-http", host="127.0.0.1", port=port)
    elif (
        transport == "http-json"
    ):  # answers plain requests with a JSON body instead of an SSE stream
        server.run("streamable-http", host="127.0.0.1", port=port, json_response=True)
    elif transport == "https":  # Streamable HTTP over TLS, as most remote servers are
        import uvicorn

        app = server.streamable_http_app(host="127.0.0.1")
        uvicorn.run(
            app, host="127.0.0.1", port=port, log_level="warning",
            ssl_certfile=os.environ["ECHO_TLS_CERT"], ssl_keyfile=os.environ["ECHO_TLS_KEY"],
        )  # fmt: skip
    elif transport == "http-stateless":  # no session id, a JSON body per request
        server.run(
            "streamable-http", host="127.0.0.1", port=port, json_response=True, stateless_http=True
        )
    else:
        server.run("sse", host="127.0.0.1", port=port)
