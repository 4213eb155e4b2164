"""The reference server-everything samples and lists roots: the hub answers both for a gateway
client that declares neither (as Claude Desktop and LM Studio do)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tests.host.conftest import EVERYTHING, _endpoint
from tests.live_hub import mcp_client
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


@pytest.fixture
def roots_endpoint(alice, everything_discovery):
    """Alice's endpoint with server-everything under a name of this test's own, and roots. The
    server asks for roots once per connection and keeps the answer: on the shared `everything`
    connection, an earlier test's endpoint without roots would have answered for good."""
    name = f"everything-{uuid.uuid4().hex[:8]}"
    roots = [{"uri": "file:///home/alice/notes", "name": "Notes"}]
    return _endpoint(
        alice, {**EVERYTHING, "name": name}, everything_discovery, sampling="auto", roots=roots
    )


async def test_server_everything_sampling_and_roots_answered_by_the_hub(
    hub, llm, alice_provider, roots_endpoint, alice_hub_token
):
    llm.script([Reply(text=["Forty-two."], usage=(12, 3))])
    async with mcp_client(hub.url(roots_endpoint.path), alice_hub_token) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        sampled = await client.call_tool(
            "trigger-sampling-request", {"prompt": "the answer?", "maxTokens": 40}
        )
        # The server asks for roots 350 ms after initialize, or at this call if it has not yet:
        # asked while no call of ours is in flight, the hub cannot say whose they are. Ask again.
        for _ in range(50):
            roots = await client.call_tool("get-roots-list", {})
            if "no roots are currently configured" not in roots.content[0].text:
                break
            await asyncio.sleep(0.2)

    assert {"trigger-sampling-request", "get-roots-list"} <= names
    assert not sampled.is_error, sampled.content[0].text
    assert "Forty-two." in sampled.content[0].text and '"model": "scripted-model"' in (
        sampled.content[0].text
    )
    request = llm.requests[0]
    assert request["messages"][0] == {"role": "system", "content": "You are a helpful test server."}
    assert request["temperature"] == 0.7 and request["max_tokens"] == 40
    assert "file:///home/alice/notes" in roots.content[0].text
