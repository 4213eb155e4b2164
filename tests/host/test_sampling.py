"""A backend asks the client's model to write something (sampling) during a call: Alice's own model
answers it in chat and for gateway clients that cannot, as her endpoint's setting says."""

from __future__ import annotations

import json

import mcp_types as types
import pytest
from mcp import MCPError

from apps.chat.models import Turn
from apps.llm.models import Provider
from apps.toolsets.models import Endpoint
from tests.chat.conftest import Api, chat_socket, db
from tests.live_hub import mcp_client
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


def _answer(result) -> dict:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def test_a_chat_turns_backend_is_answered_by_alices_model(
    hub, llm, alice_provider, asker_endpoint, alice_hub_token
):
    llm.script(
        [
            Reply(tool_calls=[("c1", "write", {"question": "a haiku about ponds"})], usage=(20, 4)),
            Reply(text=["old pond, frog jumps"], usage=(9, 6)),
            Reply(text=["Here it is."], usage=(30, 3)),
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "write me a haiku"})
            result = await chat.until("tool_result", id="c1")
            end = await chat.until("end")

    # The page shows the sampling as a card: what the server asked, and what the model answered.
    [card] = [e["payload"] for e in chat.of("tool_result") if e["payload"]["name"] == "sampling"]
    assert card["content"][0]["text"] == "old pond, frog jumps" and card["isError"] is False
    asked = [e["payload"] for e in chat.of("tool_call") if e["payload"]["name"] == "sampling"]
    assert asked[0]["arguments"]["messages"] == ["user: a haiku about ponds"]
    sampled = llm.requests[1]
    assert sampled["messages"] == [
        {"role": "system", "content": "You write haiku."},
        {"role": "user", "content": "a haiku about ponds"},
    ]
    assert sampled["temperature"] == 0.3 and sampled["stop"] == ["END"]
    assert sampled["max_tokens"] == 300  # the endpoint's cap, not the 100,000 asked for
    assert "tools" not in sampled
    assert json.loads(result["payload"]["content"][0]["text"]) == {
        "text": "old pond, frog jumps",
        "model": "scripted-model",
        "stop": "endTurn",
    }
    # The sampling counts with the turn's tokens.
    assert end["payload"]["usage"] == {"input_tokens": 59, "output_tokens": 13}
    turn = await db(lambda: Turn.objects.get(conversation_id=conversation))()
    assert (turn.input_tokens, turn.output_tokens) == (59, 13)


async def test_model_hints_pick_alices_provider_by_its_model(
    hub, llm, alice, alice_provider, asker_endpoint, alice_hub_token
):
    await db(Provider.objects.create)(
        name="large", kind="openai", base_url=llm.url, default_model="scripted-large", owner=alice
    )
    llm.script([Reply(text=["big answer"]), Reply(text=["small answer"])])
    async with mcp_client(hub.url(asker_endpoint.path), alice_hub_token) as client:
        hinted = _answer(await client.call_tool("write", {"question": "q", "hint": "large"}))
        unhinted = _answer(await client.call_tool("write", {"question": "q", "hint": "gpt-9"}))

    assert (hinted["model"], hinted["text"]) == ("scripted-large", "big answer")
    assert (unhinted["model"], unhinted["text"]) == ("scripted-model", "small answer")
    assert [r["model"] for r in llm.requests] == ["scripted-large", "scripted-model"]


async def test_tool_use_inside_sampling_for_a_client_without_sampling(
    hub, llm, alice_provider, asker_endpoint, alice_hub_token
):
    llm.script(
        [
            Reply(tool_calls=[("w1", "weather", {"city": "Paris"})]),
            Reply(text=["Walk by the Seine: it is sunny."]),
        ]
    )
    async with mcp_client(hub.url(asker_endpoint.path), alice_hub_token) as client:
        answer = _answer(await client.call_tool("plan_trip", {"city": "Paris"}))

    assert answer == {
        "text": "Walk by the Seine: it is sunny.",
        "stop": "endTurn",
        "model": "scripted-model",
    }
    first, second = llm.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["weather"]
    told = [m for m in second["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in told] == [("w1", "sunny in Paris")]


async def test_a_client_that_declares_sampling_keeps_answering_it(
    hub, llm, alice_provider, asker_endpoint, alice_hub_token
):
    async def sampling(context, params: types.CreateMessageRequestParams):
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="mine"), model="client"
        )

    async with mcp_client(
        hub.url(asker_endpoint.path), alice_hub_token, sampling_callback=sampling
    ) as client:
        answer = _answer(await client.call_tool("write", {"question": "q"}))

    assert answer["text"] == "mine" and answer["model"] == "client"
    assert llm.requests == []


@pytest.mark.parametrize(
    ("policy", "said"),
    [("off", "Sampling is off on this endpoint."), ("ask", "nobody can be asked")],
)
async def test_off_and_ask_refuse_a_gateway_client_that_cannot_be_asked(
    hub, llm, alice_provider, asker_endpoint, alice_hub_token, policy, said
):
    await db(Endpoint.objects.filter(pk=asker_endpoint.pk).update)(sampling=policy)
    async with mcp_client(hub.url(asker_endpoint.path), alice_hub_token) as client:
        # The backend lets the refusal out of its tool as the call's JSON-RPC error.
        with pytest.raises(MCPError) as refused:
            await client.call_tool("write", {"question": "q"})

    assert said in refused.value.message
    assert llm.requests == []


@pytest.mark.parametrize("allow", [True, False])
async def test_ask_shows_the_request_in_chat_to_allow_or_deny(
    hub, llm, alice_provider, asker_endpoint, alice_hub_token, allow
):
    await db(Endpoint.objects.filter(pk=asker_endpoint.pk).update)(sampling="ask")
    llm.script(
        [
            Reply(tool_calls=[("c1", "write", {"question": "a haiku about ponds"})]),
            *([Reply(text=["old pond"])] if allow else []),
            Reply(text=["ok"]),
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "write me a haiku"})
            asked = await chat.until("approval_required")
            await chat.send("approve", {"call_id": asked["payload"]["id"], "allow": allow})
            result = await chat.until("tool_result", id="c1")
            await chat.until("end")

    assert asked["payload"]["name"] == "sampling"
    assert asked["payload"]["arguments"] == {
        "systemPrompt": "You write haiku.",
        "messages": ["user: a haiku about ponds"],
        "maxTokens": 300,
    }
    text = result["payload"]["content"][0]["text"]
    if allow:
        assert json.loads(text)["text"] == "old pond"
        assert len(llm.requests) == 3
    else:
        assert result["payload"]["isError"] and "declined" in text
        assert len(llm.requests) == 2
