"""The reference server-everything samples and lists roots: the hub answers both for a gateway
client that declares neither (as Claude Desktop and LM Studio do)."""

from __future__ import annotations

import asyncio

import pytest

from apps.toolsets.models import Endpoint
from tests.chat.conftest import db
from tests.live_hub import mcp_client
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


async def test_server_everything_sampling_and_roots_answered_by_the_hub(
    hub, llm, alice_provider, everything_endpoint, alice_hub_token
):
    await db(Endpoint.objects.filter(pk=everything_endpoint.pk).update)(
        roots=[{"uri": "file:///home/alice/notes", "name": "Notes"}]
    )
    llm.script([Reply(text=["Forty-two."], usage=(12, 3))])
    async with mcp_client(hub.url(everything_endpoint.path), alice_hub_token) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        sampled = await client.call_tool(
            "trigger-sampling-request", {"prompt": "the answer?", "maxTokens": 40}
        )
        # The server asks for roots on its own once initialized; a loaded machine may answer
        # this call first ("roots ... still being loaded"): ask until they are in.
        for _ in range(50):
            roots = await client.call_tool("get-roots-list", {})
            if "still being loaded" not in roots.content[0].text:
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
