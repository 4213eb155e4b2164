"""A gateway client that declares neither elicitation nor sampling (the `mcp` SDK client without
those callbacks) calls tools that ask the user: the question goes to Alice's open hub page
(`/ws/asks/`, here a WebSocket client standing in for it: tests/host/test_browser_asks.py does it
in Chromium), her answer lets the call go on; with no page open the call gets the clear error at
once."""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import asynccontextmanager

import pytest
import websockets
from mcp import MCPError

from apps.catalog.models import McpServer
from apps.toolsets.models import Endpoint
from tests.chat.conftest import db
from tests.live_hub import mcp_client
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


@asynccontextmanager
async def open_page(hub, token: str):
    url = hub.url("/ws/asks/").replace("http://", "ws://")
    async with websockets.connect(
        url, additional_headers={"Authorization": f"Bearer {token}"}
    ) as ws:
        yield ws


async def _next(ws, kind: str) -> dict:
    while True:
        event = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if event["type"] == kind:
            return event["payload"]


async def _answer(ws, payload: dict) -> None:
    await ws.send(json.dumps({"type": "answer", "payload": payload}))


async def _tool(client, name: str) -> str:
    return next(t.name for t in (await client.list_tools()).tools if t.name.endswith(name))


async def test_alice_answers_a_backends_form_on_her_open_page(
    hub, everything_endpoint, alice_hub_token
):
    async with (
        open_page(hub, alice_hub_token) as page,
        mcp_client(hub.url(everything_endpoint.path), alice_hub_token) as client,
    ):
        tool = await _tool(client, "trigger-elicitation-request")
        call = asyncio.ensure_future(client.call_tool(tool, {}))
        asked = await _next(page, "ask")
        await _answer(page, {"id": asked["id"], "action": "accept", "content": {"integer": 500}})
        wrong = await _next(page, "error")
        content = {"name": "Alice Liddell", "integer": 7}
        await _answer(page, {"id": asked["id"], "action": "accept", "content": content})
        gone = await _next(page, "gone")
        result = await asyncio.wait_for(call, 30)

    assert asked["kind"] == "elicitation" and asked["mode"] == "form"
    assert asked["message"] == "Please provide inputs for the following fields:"
    assert wrong == {"id": asked["id"], "message": "String is required."}
    assert gone == {"id": asked["id"]}
    text = "\n".join(c.text for c in result.content)
    assert "- Name: Alice Liddell" in text and "- Favorite Integer: 7" in text


async def test_with_no_page_open_the_call_gets_the_clear_error_at_once(
    hub, everything_endpoint, alice_hub_token
):
    async with mcp_client(hub.url(everything_endpoint.path), alice_hub_token) as client:
        tool = await _tool(client, "trigger-elicitation-request")
        clock = time.monotonic()
        try:
            result = await client.call_tool(tool, {})
            said = "\n".join(c.text for c in result.content)
        except MCPError as exc:
            said = exc.error.message
        took = time.monotonic() - clock

    assert "nobody could be asked" in said, said
    assert took < 15, took  # the page acknowledgement's 5 s, not the 120 s answer wait


async def test_alice_allows_a_sampling_request_on_her_open_page(
    hub, llm, alice_provider, asker_endpoint, alice_hub_token
):
    await db(lambda: Endpoint.objects.filter(pk=asker_endpoint.pk).update(sampling="ask"))()
    llm.script([Reply(text=["old pond, frog jumps"])])
    async with (
        open_page(hub, alice_hub_token) as page,
        mcp_client(hub.url(asker_endpoint.path), alice_hub_token) as client,
    ):
        tool = await _tool(client, "write")
        call = asyncio.ensure_future(client.call_tool(tool, {"question": "a haiku"}))
        asked = await _next(page, "ask")
        await _answer(page, {"id": asked["id"], "allow": True})
        result = await asyncio.wait_for(call, 30)

    assert asked["kind"] == "sampling" and "user: a haiku" in asked["arguments"]["messages"]
    assert json.loads(result.content[0].text)["text"] == "old pond, frog jumps"


async def test_a_question_leaves_alices_pages_when_its_call_times_out(
    hub, everything_endpoint, alice_hub_token
):
    # The backend's call may take 2 s: its question must not outlive that on Alice's pages.
    await db(lambda: McpServer.objects.filter(name="everything").update(timeout=2))()
    async with (
        open_page(hub, alice_hub_token) as page,
        open_page(hub, alice_hub_token) as other_tab,
        mcp_client(hub.url(everything_endpoint.path), alice_hub_token) as client,
    ):
        tool = await _tool(client, "trigger-elicitation-request")
        clock = time.monotonic()
        call = asyncio.ensure_future(client.call_tool(tool, {}))
        asked = await _next(page, "ask")
        await _next(other_tab, "ask")
        gone = await _next(page, "gone")
        took = time.monotonic() - clock
        assert gone == {"id": asked["id"]}
        assert await _next(other_tab, "gone") == {"id": asked["id"]}
        result = await asyncio.wait_for(call, 30)
        content = {"name": "Alice Liddell", "integer": 7}
        await _answer(page, {"id": asked["id"], "action": "accept", "content": content})
        late = await _next(page, "error")

    assert took < 15, took  # the call's 2 s timeout, not MCPHUB_PAGE_ASK_SECONDS (120 s)
    assert result.is_error and "timed out" in result.content[0].text.lower(), result
    assert late == {"message": "Send 'answer' with the id of a question this page shows."}


async def test_a_question_leaves_alices_page_when_her_client_cancels_the_call(
    hub, everything_endpoint, alice_hub_token
):
    async with (
        open_page(hub, alice_hub_token) as page,
        mcp_client(hub.url(everything_endpoint.path), alice_hub_token) as client,
    ):
        tool = await _tool(client, "trigger-elicitation-request")
        call = asyncio.ensure_future(client.call_tool(tool, {}))
        asked = await _next(page, "ask")
        call.cancel()  # the SDK client sends notifications/cancelled for it
        gone = await _next(page, "gone")

    assert gone == {"id": asked["id"]}
