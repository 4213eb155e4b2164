"""Alice's endpoint in dynamic mode: her client sees a few meta-tools, searches the catalog,
loads what it needs (and hears list_changed), calls it, and unloads it again."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from mcp import MCPError

from apps.toolsets.services import update_endpoint
from tests.live_hub import mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

META = {"search_tools", "load_tools", "unload_tools", "call_tool"}


@pytest.fixture
def dynamic_endpoint(alice, echo_server):
    """Alice's default endpoint, dynamic, with nothing enabled: every echo tool is searchable."""
    return update_endpoint(endpoint=alice.endpoints.get(), mode="dynamic")


def _listener():
    changes: list[str] = []
    heard = asyncio.Event()

    async def handler(message) -> None:
        method = getattr(getattr(message, "root", message), "method", None) or getattr(
            message, "method", None
        )
        if method == "notifications/tools/list_changed":
            changes.append(method)
            heard.set()

    return handler, changes, heard


async def _names(client) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_search_load_call_unload(hub, dynamic_endpoint, alice_hub_token, transport):
    handler, changes, heard = _listener()
    path = dynamic_endpoint.path + ("sse" if transport == "sse" else "")

    async with mcp_client(
        hub.url(path), alice_hub_token, transport=transport, message_handler=handler
    ) as client:
        at_start = await _names(client)
        found = await client.call_tool("search_tools", {"query": "add two numbers", "limit": 3})
        loaded = await client.call_tool("load_tools", {"names": ["add"]})
        await asyncio.wait_for(heard.wait(), 10)
        after_load = await _names(client)
        total = await client.call_tool("add", {"a": 2, "b": 3})
        heard.clear()
        await client.call_tool("unload_tools", {"names": ["add"]})
        await asyncio.wait_for(heard.wait(), 10)
        after_unload = await _names(client)

    assert at_start == META
    hits = found.structured_content["tools"]
    assert (
        hits[0]["name"] == "add"
        and hits[0]["server"] == "echo"
        and hits[0]["tokens"] > 0
        and hits[0]["score"] > 0
    )
    assert json.loads(found.content[0].text) == found.structured_content
    assert loaded.structured_content["loaded"] == ["add"] and not loaded.is_error
    assert after_load == META | {"add"}
    assert total.structured_content == {"result": 5}
    assert after_unload == META
    assert len(changes) >= 2


async def test_a_tool_not_loaded_is_refused_but_call_tool_reaches_it(
    hub, dynamic_endpoint, alice_hub_token
):
    async with mcp_client(hub.url(dynamic_endpoint.path), alice_hub_token) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("echo", {"text": "x"})
        through = await client.call_tool(
            "call_tool", {"name": "echo", "arguments": {"text": "via call_tool"}}
        )
        typo = await client.call_tool("call_tool", {"name": "ecko", "arguments": {}})
        names = await _names(client)

    assert "not loaded in this session" in refused.value.message
    assert through.content[0].text == "via call_tool" and not through.is_error
    assert (
        typo.is_error
        and "Unknown tool: ecko" in typo.content[0].text
        and "echo" in typo.content[0].text
    )
    assert names == META  # call_tool loads nothing


async def test_pinned_tools_stay_listed_and_bad_input_changes_nothing(
    hub, dynamic_endpoint, alice_hub_token, echo_server
):
    from apps.toolsets.services import enable_tools

    await sync_to_async(
        lambda: enable_tools(endpoint=dynamic_endpoint, tools=echo_server.tools.filter(name="echo"))
    )()

    async with mcp_client(hub.url(dynamic_endpoint.path), alice_hub_token) as client:
        names = await _names(client)
        pinned = await client.call_tool("echo", {"text": "pinned"})
        unknown = await client.call_tool("load_tools", {"names": ["no_such_tool"]})
        unpin = await client.call_tool("unload_tools", {"names": ["echo"]})
        with pytest.raises(MCPError) as bad_limit:
            await client.call_tool("search_tools", {"query": "echo", "limit": 0})
        after = await _names(client)

    assert names == META | {"echo"} and after == names
    assert pinned.content[0].text == "pinned"
    assert (
        unknown.is_error
        and "Unknown tool: no_such_tool" in unknown.structured_content["errors"]["no_such_tool"]
    )
    assert "pinned" in unpin.structured_content["errors"]["echo"]
    assert bad_limit.value.code == -32602


async def test_a_stateless_2026_client_searches_and_calls_through_call_tool(
    hub, dynamic_endpoint, alice_hub_token
):
    async with mcp_client(hub.url(dynamic_endpoint.path), alice_hub_token, mode="auto") as client:
        names = await _names(client)
        found = await client.call_tool("search_tools", {"query": "echo text back"})
        loaded = await client.call_tool("load_tools", {"names": ["echo"]})
        called = await client.call_tool(
            "call_tool", {"name": "echo", "arguments": {"text": "stateless"}}
        )

    assert names == META
    assert found.structured_content["tools"][0]["name"] == "echo"
    assert loaded.is_error and "use call_tool" in loaded.content[0].text
    assert called.content[0].text == "stateless"


async def test_several_queries_at_once_each_find_their_tool(hub, dynamic_endpoint, alice_hub_token):
    """`queries`: each request gets its own chance, the results come back merged; bad lists
    are invalid params."""
    async with mcp_client(hub.url(dynamic_endpoint.path), alice_hub_token) as client:
        one = await client.call_tool("search_tools", {"query": "add two integers", "limit": 2})
        both = await client.call_tool(
            "search_tools",
            {"queries": ["add two integers", "this server's process id"], "limit": 2},
        )
        refused = {}
        for name, arguments in {
            "empty": {"queries": []},
            "blank": {"queries": ["add", " "]},
            "not text": {"queries": ["add", 3]},
            "too many": {"queries": [f"tool {n}" for n in range(9)]},
            "too long": {"queries": ["add", "x" * 2001]},
            "neither": {"limit": 3},
        }.items():
            with pytest.raises(MCPError) as error:
                await client.call_tool("search_tools", arguments)
            refused[name] = error.value
        names = await _names(client)

    assert [t["name"] for t in one.structured_content["tools"]][0] == "add"
    assert "pid" not in {t["name"] for t in one.structured_content["tools"]}
    assert {t["name"] for t in both.structured_content["tools"]} == {"add", "pid"}
    assert all(e.code == -32602 for e in refused.values())
    assert "'queries' must be a list of 1 to 8" in refused["empty"].message
    assert "at most 2000 characters" in refused["too long"].message
    assert "'query' must be a non-empty string" in refused["neither"].message
    assert names == META  # searching loads nothing
