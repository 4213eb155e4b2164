"""A 500-tool endpoint's tools/list in static vs dynamic mode, through the gateway's ASGI app
in-process (initialize, then tools/list, load_tools, tools/list), on a throwaway test database."""

from __future__ import annotations

import asyncio
import json
import math
import statistics

from asgiref.sync import sync_to_async

from apps.accounts.models import User
from apps.accounts.services import create_access_token
from apps.catalog.introspection import CHARS_PER_TOKEN, estimate_tokens
from apps.catalog.models import McpServer, Tool
from apps.gateway.transport import Gateway
from apps.toolsets.services import set_enabled_tools, update_endpoint
from benchmarks.django_db import test_database
from tests.gateway.asgi import call
from tests.live_hub import INITIALIZE

QUERIES = 20


def _setup(tools) -> tuple[object, str]:
    user = User.objects.create_user("bench", password="bench")
    server = McpServer.objects.create(
        name="bfcl", transport="streamable_http", url="http://127.0.0.1:9/mcp"
    )
    rows = []
    for tool in tools:
        entry = {"name": tool.name, "description": tool.description, "inputSchema": tool.parameters}
        rows.append(
            Tool(
                server=server,
                name=tool.name,
                description=tool.description,
                input_schema=tool.parameters,
                token_estimate=estimate_tokens(entry),
            )
        )
    Tool.objects.bulk_create(rows, ignore_conflicts=True)
    endpoint = user.endpoints.get()
    set_enabled_tools(endpoint=endpoint, tools=server.tools.all(), enforce_budget=False)
    return endpoint, create_access_token(user=user, name="bench")[1]


def _rpc(method: str, params: dict, request_id: int = 2) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    ).encode()


def _tokens(listing: dict) -> int:
    return math.ceil(
        len(json.dumps(listing["result"]["tools"], separators=(",", ":"))) / CHARS_PER_TOKEN
    )


async def _listings(endpoint, token: str, queries) -> tuple[int, int, list[int]]:
    app, path, auth = Gateway(), endpoint.path, {"authorization": f"Bearer {token}"}

    async def session() -> dict[str, str]:
        reply = await call(app, path, json.dumps(INITIALIZE).encode(), headers=auth)
        return {
            **auth,
            "mcp-session-id": reply.headers["mcp-session-id"],
            "accept": "application/json",
        }

    static = _tokens(
        (await call(app, path, _rpc("tools/list", {}), headers=await session())).json()
    )
    await sync_to_async(update_endpoint)(endpoint=endpoint, mode="dynamic")
    await sync_to_async(
        lambda: endpoint.endpoint_tools.all().delete()
    )()  # nothing pinned: the 500 are searched
    await sync_to_async(update_endpoint)(endpoint=endpoint, token_budget=endpoint.token_budget)
    from apps.toolsets.exposure import forget_views

    forget_views()
    headers = await session()
    bare = _tokens((await call(app, path, _rpc("tools/list", {}), headers=headers)).json())
    loaded = []
    for query in queries:
        headers = await session()
        found = (
            await call(
                app,
                path,
                _rpc(
                    "tools/call",
                    {"name": "search_tools", "arguments": {"query": query.text, "limit": 5}},
                ),
                headers=headers,
            )
        ).json()
        names = [t["name"] for t in found["result"]["structuredContent"]["tools"]]
        await call(
            app,
            path,
            _rpc("tools/call", {"name": "load_tools", "arguments": {"names": names or ["x"]}}),
            headers=headers,
        )
        loaded.append(
            _tokens((await call(app, path, _rpc("tools/list", {}), headers=headers)).json())
        )
    return static, bare, loaded


def static_vs_dynamic(tools, queries) -> None:
    with test_database():
        endpoint, token = _setup(tools)
        static, bare, loaded = asyncio.run(_listings(endpoint, token, queries[:QUERIES]))
    mean = statistics.mean(loaded)
    print(
        f"\n{len(tools)}-tool endpoint, tools/list through the gateway: static {static:,} tokens; dynamic {bare:,} "
        f"({100 * bare / static:.1f} %) with only the meta-tools, {mean:,.0f} ({100 * mean / static:.1f} %) "
        f"after loading a query's top 5 (mean of {len(loaded)} queries; target ≤ 10 %)"
    )
