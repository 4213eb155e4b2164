"""Through a running hub: an MCP client (the `mcp` SDK) calls a REST API's operations as tools on
alice's endpoint; the hub's own REST API, registered by its own document, lets her manage the hub
with her own token; a chat turn's model calls an openapi tool."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from apps.catalog import openapi, operations
from apps.catalog.models import McpServer
from apps.credentials.services import save_credentials
from apps.toolsets.models import ToolCall
from apps.toolsets.services import enable_tools
from tests.chat.conftest import Api, alice_provider, chat_socket, db, llm  # noqa: F401 - fixtures
from tests.gateway.conftest import (  # noqa: F401 - fixtures
    _close_thread_connections,
    alice_hub_token,
)
from tests.live_hub import mcp_client
from tests.llm_server import Reply
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def register(name: str, source: str, **fields) -> McpServer:
    """What the API does on POST /api/servers/: the document loaded, then the server discovered."""
    values = openapi.complete({"openapi_source": source, "url": ""}, public_only=False)
    server = McpServer.objects.create(name=name, transport="openapi", **values, **fields)
    outcome = operations.discover_now(server=server)
    assert outcome.ok, outcome
    return server


@pytest.fixture
def items_endpoint(pool_host, alice, api):
    server = register(
        "items", f"{api.url}/openapi.json", openapi_filters={"include": ["tag:items"]}
    )
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=server.tools.all())
    return endpoint


async def test_an_mcp_client_calls_rest_operations_through_the_gateway(
    hub, items_endpoint, alice_hub_token, api
):
    async with mcp_client(hub.url(items_endpoint.path), alice_hub_token) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        got = await client.call_tool("getItem", {"itemId": 5, "color": "blue"})
        wrong = await client.call_tool("getItem", {"itemId": "five"})

    assert {"getItem", "createItem", "deleteItem", "listItems"} <= set(tools)
    assert tools["getItem"].annotations.read_only_hint is True
    assert tools["deleteItem"].annotations.destructive_hint is True
    assert got.is_error is False
    assert got.structured_content["id"] == 5 and got.structured_content["color"] == "blue"
    assert wrong.is_error is True
    assert "argument 'itemId': 'five' is not of type 'integer'" in wrong.content[0].text

    def both_logged():
        rows = ToolCall.objects.filter(endpoint=items_endpoint).values_list("exposed_name", "ok")
        return sorted(rows) if len(rows) == 2 else None

    logged = await eventually_async(db(both_logged), what="both calls in the call log")
    assert logged == [("getItem", False), ("getItem", True)]


async def test_the_hubs_own_api_through_its_own_document_as_each_user(
    hub, pool_host, alice, alice_hub_token, charlie, charlie_token
):
    def setup():
        server = register(
            "hubapi",
            hub.url("/api/schema/"),
            headers={"scheme:hubToken": "${user:HUB_TOKEN}"},
            openapi_filters={"include": ["operation:tokens_list", "operation:servers_list"]},
        )
        save_credentials(user=alice, server=server, values={"HUB_TOKEN": alice_hub_token})
        for user in (alice, charlie):
            enable_tools(endpoint=user.endpoints.get(), tools=server.tools.all())
        return alice.endpoints.get(), charlie.endpoints.get()

    endpoint, charlies = await sync_to_async(setup)()
    async with mcp_client(hub.url(endpoint.path), alice_hub_token) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        tokens = await client.call_tool("tokens_list", {})
    async with mcp_client(hub.url(charlies.path), charlie_token) as client:
        not_his = await client.call_tool("tokens_list", {})

    assert {"tokens_list", "servers_list"} <= names
    assert tokens.is_error is False, tokens.content[0].text
    # Alice's own tokens, as the REST API gives them to her: the call went as her.
    listed = json.loads(tokens.content[0].text)
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert "gateway tests" in {row["name"] for row in rows}
    # Charlie filled no token of his own: he is told to, and never calls with alice's.
    assert not_his.is_error is True
    assert "needs your credentials: fill HUB_TOKEN" in not_his.content[0].text


async def test_a_chat_turn_calls_an_openapi_tool(
    hub, llm, alice_provider, items_endpoint, alice_hub_token
):
    llm.script(
        [
            Reply(tool_calls=[("c1", "getItem", {"itemId": 42, "color": "red"})]),
            Reply(text=["Item 42 is red."]),
        ]
    )

    async with Api(hub.base_url, alice_hub_token) as chat_api:
        conversation = await chat_api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "What colour is item 42?"})
            end = await chat.until("end")

    assert end["payload"]["status"] == "complete"
    offered = {t["function"]["name"] for t in llm.requests[0]["tools"]}
    assert "getItem" in offered
    (result,) = chat.of("tool_result")
    assert result["payload"]["isError"] is False, result["payload"]
    tool_message = next(m for m in llm.requests[1]["messages"] if m["role"] == "tool")
    assert json.loads(tool_message["content"])["id"] == 42


async def test_a_changed_document_reaches_connected_clients_as_list_changed(
    hub, items_endpoint, alice_hub_token, api
):
    import asyncio

    from tests.gateway.test_list_changed import _collector
    from tests.openapi.rest_api import document

    handler, changed = _collector()
    async with mcp_client(
        hub.url(items_endpoint.path), alice_hub_token, message_handler=handler
    ) as client:
        before = {t.name for t in (await client.list_tools()).tools}
        await asyncio.sleep(0.5)  # let the client open its notification stream
        renamed = document(api.url)
        renamed["paths"]["/items/{itemId}"]["delete"]["operationId"] = "removeItem"
        api.document_override = json.dumps(renamed)
        server = await sync_to_async(McpServer.objects.get)(name="items")
        outcome = await sync_to_async(operations.discover_now)(server=server)
        assert outcome.ok, outcome
        await asyncio.wait_for(changed.wait(), 15)
        after = {t.name for t in (await client.list_tools()).tools}

    assert "deleteItem" in before and before - after == {"deleteItem"}
