"""Test MCP server with pictures: an image resource and a prompt whose messages carry an image
(`python pictures.py` serves stdio). Chat attaches both to the model where the provider takes them."""

import base64

import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage

# A 1×1 red PNG.
DOT = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
server = MCPServer("pictures", version="1.0", log_level="WARNING")


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
def dot_size() -> str:
    """The dot's size (an endpoint lists a server's prompts and resources once a tool of it is on)."""
    return "1x1"


@server.resource("pictures://dot.png", mime_type="image/png")
def dot() -> bytes:
    return DOT


@server.prompt()
def describe(subject: str) -> list:
    """Ask the model to describe a picture."""
    image = types.ImageContent(
        type="image", data=base64.b64encode(DOT).decode(), mime_type="image/png"
    )
    return [UserMessage(f"Describe this {subject}:"), UserMessage(image)]


if __name__ == "__main__":
    server.run("stdio")
