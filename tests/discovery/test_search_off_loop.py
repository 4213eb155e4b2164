"""A search encodes its query (CPU for milliseconds) in an encoder process, not in the web
process: a tools/call on the same web process is answered while a search is under way, even when
the encoding holds its process's interpreter lock throughout (in a thread of the web process it
would stop the event loop for as long)."""

from __future__ import annotations

import asyncio
import functools
import json
import time

import pytest

from apps.discovery import catalog as discovery_catalog
from apps.discovery import embeddings
from apps.gateway.transport import Gateway
from apps.toolsets.services import enable_tools, update_endpoint
from tests.discovery import slow_encoder
from tests.gateway.asgi import call
from tests.live_hub import INITIALIZE

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not embeddings.available(), reason="the embedding model is not installed"),
]

BOUND = slow_encoder.SECONDS / 5  # "did not wait for the search", 5× margin: not a speed claim


def _rpc(method: str, params: dict, request_id: int = 2) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    ).encode()


@pytest.fixture
def endpoint(alice, echo_server):
    """Alice's endpoint, dynamic, with the echo server's `add` enabled (called directly)."""
    endpoint = update_endpoint(endpoint=alice.endpoints.get(), mode="dynamic")
    enable_tools(endpoint=endpoint, tools=echo_server.tools.filter(name="add"))
    return endpoint


@pytest.fixture
def slow_encoder_process(monkeypatch):
    """The hub's encoder processes (as configured: MCPHUB_ENCODER_PROCESSES) run slow_encoder."""
    assert embeddings.PROCESSES >= 1, "searches encode in the web process"
    monkeypatch.setattr(embeddings, "WORKER", slow_encoder.__name__)
    embeddings.encoder.cache_clear()
    embeddings.encoder().encode(["started"], remember=False)  # its start is not what is timed
    yield
    embeddings.encoder().close()
    embeddings.encoder.cache_clear()


async def test_a_slow_search_does_not_hold_up_a_tool_call(
    endpoint, alice_hub_token, settings, monkeypatch, slow_encoder_process
):
    settings.MCPHUB_DISCOVERY_METHOD = "embedding"
    # The tools' vectors are ready before the first search (no BM25-only answer while they are
    # computed); a query holding "slowly" then takes seconds of lock-holding CPU to encode.
    monkeypatch.setattr(
        discovery_catalog,
        "index",
        functools.partial(discovery_catalog.index, background=False),
    )
    discovery_catalog.forget()
    app = Gateway()
    auth = {"authorization": f"Bearer {alice_hub_token}"}
    started = await call(app, endpoint.path, json.dumps(INITIALIZE).encode(), headers=auth)
    headers = {**auth, "mcp-session-id": started.headers["mcp-session-id"]}

    def search(query: str) -> bytes:
        return _rpc("tools/call", {"name": "search_tools", "arguments": {"query": query}})

    add = _rpc("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    warm = await call(app, endpoint.path, search("add numbers"), headers=headers)
    assert warm.json()["result"]["structuredContent"]["tools"][0]["name"] == "add"
    assert "5" in json.dumps((await call(app, endpoint.path, add, headers=headers)).json())

    start = time.perf_counter()
    slow = search(f"add numbers {slow_encoder.SLOWLY}")
    searching = asyncio.ensure_future(call(app, endpoint.path, slow, headers=headers))
    await asyncio.sleep(0.2)  # the search has started encoding
    added = await call(app, endpoint.path, add, headers=headers)
    took = time.perf_counter() - start
    still_searching = not searching.done()
    found = await searching

    assert "5" in json.dumps(added.json())
    assert still_searching and took < BOUND, f"tools/call took {took:.2f} s beside a search"
    assert found.json()["result"]["structuredContent"]["tools"][0]["name"] == "add"
