"""Test MCP server that asks its client things back: `python host_server.py` (stdio).

`write` samples with a system prompt, temperature, stop sequences, a model hint and a large
max_tokens; `plan_trip` samples with a tool (tool use inside sampling, 2025-11-25) and answers the
model's tool calls until it replies in text; `workspace` lists the client's roots; `connect_account` sends the user to a page of its own (URL
elicitation) and, once that page was opened, says so (`notifications/elicitation/complete`).
"""

import asyncio
import json
import uuid

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("asker", version="1.0")
READ_ONLY = types.ToolAnnotations(read_only_hint=True)
WEATHER = types.Tool(
    name="weather",
    description="Today's weather in a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)


def _text(question: str) -> types.SamplingMessage:
    return types.SamplingMessage(role="user", content=types.TextContent(type="text", text=question))


@server.tool(annotations=READ_ONLY)
async def write(
    question: str,
    hint: str = "",
    cost: float | None = None,
    speed: float | None = None,
    intelligence: float | None = None,
    ctx: Context = None,
) -> str:
    """Ask the client's model to write an answer; returns what it said, as JSON."""
    preferences = None
    if hint or cost is not None or speed is not None or intelligence is not None:
        preferences = types.ModelPreferences(
            hints=[types.ModelHint(name=hint)] if hint else None,
            cost_priority=cost,
            speed_priority=speed,
            intelligence_priority=intelligence,
        )
    result = await ctx.session.create_message(
        [_text(question)],
        max_tokens=100_000,
        system_prompt="You write haiku.",
        temperature=0.3,
        stop_sequences=["END"],
        model_preferences=preferences,
    )
    return json.dumps(
        {"text": result.content.text, "model": result.model, "stop": result.stop_reason}
    )


# A 1x1 PNG and a few bytes said to be WAV: the hub passes them on, it does not decode them.
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
SOUND = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="


@server.tool(annotations=READ_ONLY)
async def look(audio_type: str = "", ctx: Context = None) -> str:
    """Ask the client's model about a picture (and a sound, of `audio_type`, when given)."""
    content = [
        types.TextContent(type="text", text="What is in the picture?"),
        types.ImageContent(type="image", data=PIXEL, mime_type="image/png"),
    ]
    if audio_type:
        content.append(types.AudioContent(type="audio", data=SOUND, mime_type=audio_type))
    result = await ctx.session.create_message(
        [types.SamplingMessage(role="user", content=content)], max_tokens=50
    )
    return json.dumps({"text": result.content.text, "model": result.model})


@server.tool(annotations=READ_ONLY)
async def plan_trip(city: str, ctx: Context = None) -> str:
    """Ask the client's model to plan a trip, letting it check the weather first."""
    messages = [_text(f"Plan a day in {city}.")]
    for _ in range(3):
        result = await ctx.session.create_message(messages, max_tokens=200, tools=[WEATHER])
        uses = [c for c in result.content_as_list if isinstance(c, types.ToolUseContent)]
        if not uses:
            text = " ".join(c.text for c in result.content_as_list if c.type == "text")
            return json.dumps({"text": text, "stop": result.stop_reason, "model": result.model})
        messages.append(types.SamplingMessage(role="assistant", content=result.content_as_list))
        messages.append(
            types.SamplingMessage(
                role="user",
                content=[
                    types.ToolResultContent(
                        type="tool_result",
                        tool_use_id=use.id,
                        content=[
                            types.TextContent(type="text", text=f"sunny in {use.input['city']}")
                        ],
                    )
                    for use in uses
                ],
            )
        )
    return "the model never stopped calling tools"


@server.tool(annotations=READ_ONLY)
async def workspace(ctx: Context = None) -> str:
    """The client's roots, as JSON."""
    roots = (await ctx.session.list_roots()).roots
    return json.dumps([{"uri": str(r.uri), "name": r.name} for r in roots])


async def _serve_once(opened: asyncio.Event) -> str:
    """A one-page site standing in for the account's sign-in: the URL opened sets `opened`."""

    async def visit(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        body = b"<html><body><p>Your account is connected: close this tab.</p></body></html>"
        head = f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\n"
        writer.write(head.encode() + b"Connection: close\r\n\r\n" + body)
        await writer.drain()
        writer.close()
        opened.set()

    site = await asyncio.start_server(visit, "127.0.0.1", 0)
    port = site.sockets[0].getsockname()[1]
    return f"http://127.0.0.1:{port}/connect"


@server.tool(annotations=READ_ONLY)
async def connect_account(ctx: Context = None) -> str:
    """Send the user to the account's sign-in page; done once they opened it (or after 60 s)."""
    opened, elicitation_id = asyncio.Event(), uuid.uuid4().hex
    url = await _serve_once(opened)
    answer = await ctx.elicit_url("Connect your account to go on.", url, elicitation_id)
    if answer.action != "accept":
        return f"not connected: {answer.action}"
    await asyncio.wait_for(opened.wait(), 60)
    await ctx.session.send_elicit_complete(elicitation_id, ctx.request_id)
    return f"connected ({elicitation_id})"


if __name__ == "__main__":
    server.run("stdio")
