"""Alice connects her MCP client to her endpoint and uses the tools she enabled, nothing else."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from mcp import MCPError

from apps.toolsets.models import ToolCall
from apps.toolsets.services import disable_tools
from tests.live_hub import mcp_client
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_alice_lists_and_calls_her_tools(hub, alice_endpoint, alice_hub_token, mode):
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token, mode=mode) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("add", {"a": 2, "b": 3})

    assert {"echo", "add", "progress"} <= names
    assert result.is_error is False
    assert result.structured_content == {"result": 5}


async def test_legacy_sse_transport_works_too(hub, alice_endpoint, alice_hub_token):
    async with mcp_client(
        hub.url(alice_endpoint.path + "sse"), alice_hub_token, transport="sse"
    ) as client:
        tools = (await client.list_tools()).tools
        result = await client.call_tool("echo", {"text": "over sse"})

    assert "echo" in {t.name for t in tools}
    assert result.content[0].text == "over sse"


async def test_a_disabled_tool_says_it_is_not_enabled_here_and_where_to_enable_it(
    hub, alice_endpoint, alice_hub_token, echo_server
):
    await sync_to_async(
        lambda: disable_tools(endpoint=alice_endpoint, tools=echo_server.tools.filter(name="echo"))
    )()

    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        with pytest.raises(MCPError) as error:
            await client.call_tool("echo", {"text": "x"})
        with pytest.raises(MCPError) as prefixed:
            await client.call_tool("echo__echo", {"text": "x"})
        with pytest.raises(MCPError) as typo:
            await client.call_tool("progres", {"steps": 1})

    assert error.value.code == -32602
    assert "echo (echo.echo) is not enabled on this endpoint" in error.value.message
    assert (
        f"{hub.base_url}/endpoints/{alice_endpoint.slug}/tools/" in error.value.message
    )  # where the client reached the hub
    assert "is not enabled on this endpoint" in prefixed.value.message
    assert "Unknown tool: progres" in typo.value.message and "progress" in typo.value.message


async def test_a_tool_of_a_server_charlie_cannot_see_stays_unknown_to_him(
    hub, alice_private_server, make_tool, charlie, charlie_token
):
    await sync_to_async(make_tool)(alice_private_server, "read_notes")
    charlie_endpoint = await sync_to_async(charlie.endpoints.get)()

    async with mcp_client(hub.url(charlie_endpoint.path), charlie_token) as client:
        with pytest.raises(MCPError) as error:
            await client.call_tool("read_notes", {})
        with pytest.raises(MCPError) as prefixed:
            await client.call_tool("alice-notes__read_notes", {})

    assert "Unknown tool: read_notes" in error.value.message
    assert "Unknown tool: alice-notes__read_notes" in prefixed.value.message
    assert "enable" not in error.value.message + prefixed.value.message


async def test_a_backend_failure_is_a_tool_error_not_a_hang(hub, alice_endpoint, alice_hub_token):
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        crashed = await client.call_tool("crash", {})
        after = await client.call_tool("echo", {"text": "back"})

    assert crashed.is_error is True
    assert "crash" in crashed.content[0].text
    assert after.content[0].text == "back"


async def test_every_call_is_logged(hub, alice, alice_endpoint, alice_hub_token):
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        await client.call_tool("add", {"a": 1, "b": 1})
        await client.call_tool("crash", {})

    rows = await _wait_for_rows(2, user=alice)
    assert {(r.tool_name, r.ok, r.user_id) for r in rows} == {
        ("add", True, alice.pk),
        ("crash", False, alice.pk),
    }
    assert all(r.arguments is None for r in rows)  # arguments are off by default


async def _wait_for_rows(count: int, *, user) -> list[ToolCall]:
    await eventually_async(
        sync_to_async(lambda: ToolCall.objects.filter(user=user).count() >= count),
        timeout=10,
        what=f"{count} rows in the call log",
    )
    return await sync_to_async(list)(ToolCall.objects.filter(user=user))
