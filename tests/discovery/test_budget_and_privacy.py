"""A dynamic session never holds more than the endpoint's token budget, and search shows each
user only what they may enable: charlie never sees alice's private server."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from apps.catalog.models import Tool
from apps.toolsets.models import ToolCall
from apps.toolsets.services import update_endpoint
from tests.live_hub import mcp_client
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def tight_endpoint(alice, echo_server):
    """Room for exactly two 100-token echo tools."""
    Tool.objects.filter(server=echo_server).update(token_estimate=100)
    return update_endpoint(endpoint=alice.endpoints.get(), mode="dynamic", token_budget=250)


async def test_loading_past_the_budget_unloads_the_least_recently_used_tool(
    hub, tight_endpoint, alice_hub_token
):
    async with mcp_client(hub.url(tight_endpoint.path), alice_hub_token) as client:
        await client.call_tool("load_tools", {"names": ["add"]})
        await client.call_tool("load_tools", {"names": ["echo"]})
        await client.call_tool("add", {"a": 1, "b": 1})  # add was loaded first but used last
        # The call log (written in batches) is what says add was used last.
        await eventually_async(
            sync_to_async(
                lambda: ToolCall.objects.filter(endpoint=tight_endpoint, tool_name="add").exists()
            )
        )
        third = await client.call_tool("load_tools", {"names": ["pid"]})
        listed = {t.name for t in (await client.list_tools()).tools}
        too_many = await client.call_tool("load_tools", {"names": ["log", "chatty", "slow"]})
        finally_listed = {t.name for t in (await client.list_tools()).tools}

    assert third.structured_content["loaded"] == ["pid"]
    assert third.structured_content["unloaded"] == ["echo"]
    assert third.structured_content["tokens"] == 200 and third.structured_content["budget"] == 250
    assert {"add", "pid"} <= listed and "echo" not in listed
    assert (
        len(too_many.structured_content["loaded"]) == 2
        and "slow" in too_many.structured_content["errors"]
    )
    assert too_many.structured_content["tokens"] <= 250
    assert len(finally_listed - {"search_tools", "load_tools", "unload_tools", "call_tool"}) == 2


async def test_charlies_search_never_returns_alices_private_tools(
    hub, alice, alice_private_server, make_tool, alice_hub_token, charlie, charlie_token
):
    def setup():
        make_tool(alice_private_server, "read_notes")
        for user in (alice, charlie):
            update_endpoint(endpoint=user.endpoints.get(), mode="dynamic")
        return alice.endpoints.get(), charlie.endpoints.get()

    alices, charlies = await sync_to_async(setup)()

    async def search(endpoint, token):
        async with mcp_client(hub.url(endpoint.path), token) as client:
            found = await client.call_tool(
                "search_tools", {"query": "read notes tool", "limit": 50}
            )
            loaded = await client.call_tool("load_tools", {"names": ["read_notes"]})
            called = await client.call_tool("call_tool", {"name": "read_notes", "arguments": {}})
        return [t["name"] for t in found.structured_content["tools"]], loaded, called

    alice_sees, _, _ = await search(alices, alice_hub_token)
    charlie_sees, charlie_loads, charlie_calls = await search(charlies, charlie_token)

    assert "read_notes" in alice_sees
    assert "read_notes" not in charlie_sees and "alice-notes" not in str(charlie_sees)
    assert charlie_loads.is_error and "Unknown tool: read_notes" in charlie_loads.content[0].text
    assert charlie_calls.is_error and "Unknown tool" in charlie_calls.content[0].text
