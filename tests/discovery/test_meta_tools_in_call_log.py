"""Alice's dynamic-mode calls are in her call log like any tool call: each meta-tool under its
own name, `call_tool` under the tool it called (or under its own name when it named none)."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from mcp import MCPError

from apps.toolsets.models import ToolCall
from apps.toolsets.services import update_endpoint
from tests.live_hub import mcp_client
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def dynamic_endpoint(alice, echo_server):
    return update_endpoint(endpoint=alice.endpoints.get(), mode="dynamic")


async def _log(endpoint, count: int) -> list[tuple[str, str, bool]]:
    """The endpoint's call log, oldest first, once it holds `count` rows (written in batches)."""
    read = sync_to_async(
        lambda: list(
            ToolCall.objects.filter(endpoint=endpoint)
            .order_by("started_at")
            .values_list("server_name", "exposed_name", "ok")
        )
    )
    rows: list[tuple[str, str, bool]] = []

    async def enough() -> bool:
        rows[:] = await read()
        return len(rows) >= count

    await eventually_async(enough, what=lambda: f"{count} rows in the call log, not {rows}")
    return rows


async def test_each_meta_tool_call_is_logged_under_its_name(hub, dynamic_endpoint, alice_hub_token):
    async with mcp_client(hub.url(dynamic_endpoint.path), alice_hub_token) as client:
        await client.call_tool("search_tools", {"query": "echo text back"})
        await client.call_tool("load_tools", {"names": ["echo"]})
        await client.call_tool("call_tool", {"name": "echo", "arguments": {"text": "hi"}})
        await client.call_tool("call_tool", {"name": "ecko", "arguments": {}})
        await client.call_tool("unload_tools", {"names": ["echo"]})
        with pytest.raises(MCPError):
            await client.call_tool("search_tools", {"query": "echo", "limit": 0})

    assert await _log(dynamic_endpoint, 6) == [
        ("mcphub", "search_tools", True),
        ("mcphub", "load_tools", True),
        ("echo", "echo", True),
        ("mcphub", "call_tool", False),
        ("mcphub", "unload_tools", True),
        ("mcphub", "search_tools", False),
    ]
