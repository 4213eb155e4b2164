"""Tokens Alice's model spends answering a backend's sampling during gateway calls are counted for
her (user, endpoint, server, model, tokens, time): in GET /api/usage/, the Usage page and /metrics."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.toolsets.models import SamplingUsage
from tests.chat.conftest import Api, chat_socket, db
from tests.live_hub import mcp_client, metric, scrape_metrics
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


async def test_gateway_sampling_tokens_are_counted_for_alice(
    hub, llm, alice, bob, alice_provider, asker_endpoint, alice_hub_token, scrape_token
):
    llm.script([Reply(text=["one"], usage=(9, 6)), Reply(text=["two"], usage=(4, 2))])
    before = await scrape_metrics(hub, scrape_token)
    async with mcp_client(hub.url(asker_endpoint.path), alice_hub_token) as client:
        for question in ("q1", "q2"):
            result = await client.call_tool("write", {"question": question})
            assert not result.is_error
    after = await scrape_metrics(hub, scrape_token)
    async with Api(hub.base_url, alice_hub_token) as api:
        body = (await api.client.get("/usage/")).json()

    stored = await db(lambda: list(SamplingUsage.objects.order_by("created_at").values()))()
    assert [(r["user_id"], r["endpoint_id"], r["server_name"], r["model"]) for r in stored] == [
        (alice.pk, asker_endpoint.pk, "asker", "scripted-model")
    ] * 2
    assert [(r["input_tokens"], r["output_tokens"]) for r in stored] == [(9, 6), (4, 2)]
    assert body["sampling"] == {
        "requests": 2,
        "input_tokens": 13,
        "output_tokens": 8,
        "rows": [
            {
                "user": "alice",
                "endpoint": asker_endpoint.slug,
                "server": "asker",
                "model": "scripted-model",
                "requests": 2,
                "input_tokens": 13,
                "output_tokens": 8,
            }
        ],
    }
    delta = {
        d: metric(after, "mcphub_gateway_sampling_tokens_total", server="asker", direction=d)
        - metric(before, "mcphub_gateway_sampling_tokens_total", server="asker", direction=d)
        for d in ("input", "output")
    }
    assert delta == {"input": 13, "output": 8}

    def page(user) -> str:
        browser = Client()
        browser.force_login(user)
        return browser.get("/usage/").content.decode()

    shown = await db(page)(alice)
    assert 'id="usage-sampling"' in shown and '<td class="num">13</td>' in shown
    assert 'id="usage-sampling"' not in await db(page)(bob)  # not hers to see


async def test_chat_sampling_counts_with_the_turn_not_twice(
    hub, llm, alice_provider, asker_endpoint, alice_hub_token
):
    llm.script(
        [
            Reply(tool_calls=[("c1", "write", {"question": "q"})], usage=(20, 4)),
            Reply(text=["answer"], usage=(9, 6)),
            Reply(text=["Done."], usage=(30, 3)),
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "go"})
            end = await chat.until("end")

    assert end["payload"]["usage"] == {"input_tokens": 59, "output_tokens": 13}
    assert await db(SamplingUsage.objects.count)() == 0
