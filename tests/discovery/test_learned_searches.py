"""The usage prior learns from searches that led to loads: alice searches, loads what she found,
and later searches like hers rank that tool higher; a search that led nowhere, or a load of a
tool the search did not return, teaches nothing."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from apps.discovery.catalog import Catalog, Entry, index
from apps.discovery.models import LearnedSearch
from apps.discovery.services import search_terms
from apps.toolsets.exposure import Exposed
from apps.toolsets.services import update_endpoint
from tests.live_hub import mcp_client
from tests.waiting import eventually_async


def _catalog() -> Catalog:
    catalog = Catalog(1, 1, 1, "dynamic", 10_000)
    for i, (name, description) in enumerate(
        (
            ("forecast", "Weather forecast for a city"),
            ("outlook", "Weather outlook for a city"),
            ("email", "Send an email"),
        )
    ):
        entry = {"name": name, "description": description}
        catalog.entries[name] = Entry(Exposed(name, "s", name, i, entry), 100, False, f"s.{name}")
    return index(catalog, method="bm25", background=False)


def test_a_tool_loaded_after_similar_searches_ranks_first_and_nothing_is_added():
    catalog = _catalog()
    before = [h.entry.name for h in catalog.search("weather for paris", 3)]
    later = before[1]  # the one of the two weather tools ranked second
    terms = frozenset(search_terms(["weather in paris"]).split())
    catalog.learned = [
        (terms, catalog.entries[later].exposed.item_id, 3),
        (terms, catalog.entries["email"].exposed.item_id, 50),  # learned, but never matched
    ]

    after = [h.entry.name for h in catalog.search("weather for paris", 3)]
    unrelated = [h.entry.name for h in catalog.search("city weather report", 3)]

    assert after[0] == later and "email" not in after
    assert unrelated[:2] == [h.entry.name for h in _catalog().search("city weather report", 2)]


@pytest.fixture
def dynamic_endpoint(alice, echo_server):
    return update_endpoint(endpoint=alice.endpoints.get(), mode="dynamic")


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_search_then_load_is_learned_and_nothing_else_is(
    hub, dynamic_endpoint, alice_hub_token
):
    rows = sync_to_async(
        lambda: sorted(
            LearnedSearch.objects.filter(endpoint=dynamic_endpoint).values_list(
                "terms", "tool__name", "count"
            )
        )
    )
    async with mcp_client(hub.url(dynamic_endpoint.path), alice_hub_token) as client:
        await client.call_tool("search_tools", {"query": "add two integers", "limit": 3})
        await client.call_tool("load_tools", {"names": ["add"]})
        await client.call_tool("search_tools", {"query": "adding two integers", "limit": 3})
        await client.call_tool("unload_tools", {"names": ["add"]})
        await client.call_tool("load_tools", {"names": ["add"]})  # the same search, again
        await client.call_tool("search_tools", {"query": "the process id", "limit": 1})
        await client.call_tool("load_tools", {"names": ["echo"]})  # not what it found
        await client.call_tool("search_tools", {"query": "repeat my text", "limit": 5})
        found = await client.call_tool(
            "call_tool", {"name": "echo", "arguments": {"text": "hi"}}
        )  # loaded already: no new lesson
        await client.call_tool("search_tools", {"query": "process id of the server", "limit": 2})
        await client.call_tool("call_tool", {"name": "pid", "arguments": {}})

    async def both():
        found = await rows()
        return found if len(found) >= 2 else None

    learned = await eventually_async(both, timeout=10, what="two learned searches")
    assert not found.is_error
    assert learned == [("add integ two", "add", 2), ("id process server", "pid", 1)]
