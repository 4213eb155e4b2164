"""Everything a well-behaved MCP server offers, through the hub: resources, prompts, completion,
progress, sampling relayed to the client, cancellation, logging level, pagination."""

from __future__ import annotations

import asyncio

import mcp_types as types
import pytest
from mcp import MCPError

from tests.live_hub import mcp_client
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def test_resources_and_templates_are_aggregated_and_readable(
    hub, alice_endpoint, alice_hub_token
):
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        static = await client.read_resource("echo://static")
        templated = await client.read_resource("echo://item/42")
        with pytest.raises(MCPError) as missing:
            await client.read_resource("nowhere://x")

    assert [str(r.uri) for r in resources] == ["echo://static"]
    assert [t.uri_template for t in templates] == ["echo://item/{item_id}"]
    assert static.contents[0].text == "static content"
    assert templated.contents[0].text == "item 42"
    assert missing.value.code == -32002


async def test_prompts_list_and_get(hub, alice_endpoint, alice_hub_token):
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        prompts = (await client.list_prompts()).prompts
        result = await client.get_prompt("greet", {"name": "Bob"})

    assert [p.name for p in prompts] == ["greet"]
    assert "Hello, Bob!" in result.messages[0].content.text


async def test_progress_reaches_the_client_with_its_own_token(hub, alice_endpoint, alice_hub_token):
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        result = await client.call_tool("progress", {"steps": 3}, progress_callback=on_progress)

    assert result.content[0].text == "progressed"
    assert [u[0] for u in updates] == [1, 2, 3]
    assert updates[-1][2] == "step 3"


async def test_sampling_requests_are_relayed_to_the_calling_client(
    hub, alice_endpoint, alice_hub_token
):
    asked: list[str] = []

    async def sampling(
        context, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        asked.append(params.messages[0].content.text)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="42"), model="scripted"
        )

    async with mcp_client(
        hub.url(alice_endpoint.path), alice_hub_token, sampling_callback=sampling
    ) as client:
        result = await client.call_tool("ask", {"question": "meaning of life?"})

    assert asked == ["meaning of life?"]
    assert result.content[0].text == "42"


async def test_a_cancelled_call_is_cancelled_at_the_backend(hub, alice_endpoint, alice_hub_token):
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        before = (await client.call_tool("cancellations", {})).structured_content["result"]
        call = asyncio.ensure_future(client.call_tool("slow", {"seconds": 30}))
        await asyncio.sleep(1.0)  # the slow call reaches the backend (nothing to watch for it)
        call.cancel()

        async def cancellations() -> int:
            return (await client.call_tool("cancellations", {})).structured_content["result"]

        async def counted() -> int:
            return await cancellations() > before

        await eventually_async(counted, timeout=10, interval=0.2)
        count = await cancellations()

    assert count == before + 1


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_set_level_and_ping_answer(hub, alice_endpoint, alice_hub_token):
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        level = await client.set_logging_level("warning")
        pong = await client.send_ping()

    assert level is not None and pong is not None


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_log_lines_during_a_call_reach_the_client_at_its_level(
    hub, alice_endpoint, alice_hub_token
):
    lines: list[tuple[str, object]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        lines.append((params.level, params.data))

    async with mcp_client(
        hub.url(alice_endpoint.path), alice_hub_token, logging_callback=on_log
    ) as client:
        await client.call_tool("log", {"message": "shown at the default level"})
        await client.set_logging_level("error")
        await client.call_tool("log", {"message": "info is below error: filtered"})

    assert lines == [("info", "shown at the default level")]
