"""Low-level SDK server that paginates everything: 25 tools (pages of 10), 12 resources
(pages of 5), 3 prompts (pages of 2). Checks that the pool follows cursors."""

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

TOOLS = [types.Tool(name=f"tool_{i:02d}", input_schema={"type": "object"}) for i in range(25)]
RESOURCES = [types.Resource(name=f"r{i}", uri=f"paged://r/{i}") for i in range(12)]
PROMPTS = [types.Prompt(name=f"p{i}") for i in range(3)]


def page(items, params, size):
    start = int(params.cursor) if params is not None and params.cursor else 0
    end = start + size
    return items[start:end], (str(end) if end < len(items) else None)


async def list_tools(ctx, params):
    items, cursor = page(TOOLS, params, 10)
    return types.ListToolsResult(tools=items, next_cursor=cursor)


async def list_resources(ctx, params):
    items, cursor = page(RESOURCES, params, 5)
    return types.ListResourcesResult(resources=items, next_cursor=cursor)


async def list_prompts(ctx, params):
    items, cursor = page(PROMPTS, params, 2)
    return types.ListPromptsResult(prompts=items, next_cursor=cursor)


server = Server(
    "paged",
    on_list_tools=list_tools,
    on_list_resources=list_resources,
    on_list_prompts=list_prompts,
)


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
