"""Alice chats with a model that uses her endpoint's tools, through the real hub."""

from __future__ import annotations

import pytest

from apps.chat.models import Message, Turn
from apps.llm.models import Provider
from apps.toolsets.models import ToolCall
from tests.chat.conftest import Api, chat_socket, db, seqs
from tests.live_hub import mcp_client
from tests.llm_server import Reply
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


async def test_a_turn_with_two_tool_calls_to_a_real_backend(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.script(
        [
            Reply(
                text=["Let me ", "check"],
                tool_calls=[("c1", "echo", {"text": "hi"}), ("c2", "add", {"a": 2, "b": 3})],
            ),
            Reply(text=["Echo said hi ", "and 2+3=5"], usage=(30, 7)),
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "Use the tools"})
            end = await chat.until("end")
            # Finished in the database before its `end` reached the page: a next message may start.
            finished = await db(
                lambda: Turn.objects.values_list("status", "rounds").get(
                    conversation_id=conversation
                )
            )()
        history = (await api.client.get(f"/conversations/{conversation}/messages/")).json()[
            "results"
        ]

    assert end["payload"]["status"] == "complete"
    assert finished == ("complete", 2)
    assert chat.text() == "Let me checkEcho said hi and 2+3=5"
    assert [c["payload"]["id"] for c in chat.of("tool_call")] == ["c1", "c2"]
    results = {r["payload"]["id"]: r["payload"] for r in chat.of("tool_result")}
    assert results["c1"]["content"][0]["text"] == "hi" and results["c1"]["isError"] is False
    assert results["c2"]["content"][0]["text"] == "5"
    assert seqs(chat.events) == list(range(1, len(chat.events) + 1))
    # The model was offered the endpoint's tools exactly as its MCP clients see them, and got the results.
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        listed = {t.name: t.input_schema for t in (await client.list_tools()).tools}
    offered = {t["function"]["name"]: t["function"]["parameters"] for t in llm.requests[0]["tools"]}
    assert offered == listed
    tool_messages = [m for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_messages] == [("c1", "hi"), ("c2", "5")]
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "tool", "assistant"]
    assert history[-1]["output_tokens"] == 7
    # The call log is written in batches: both calls land, and no more.
    await eventually_async(
        db(lambda: ToolCall.objects.filter(endpoint=alice_endpoint, ok=True).count() >= 2)
    )
    assert (
        await db(lambda: ToolCall.objects.filter(endpoint=alice_endpoint, ok=True).count())() == 2
    )


async def test_the_model_recovers_from_a_tool_error(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.script(
        [
            Reply(tool_calls=[("c1", "add", {"a": "two", "b": 3})]),
            Reply(tool_calls=[("c2", "add", {"a": 2, "b": 3})]),
            Reply(text=["It is 5"]),
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "add two and three"})
            await chat.until("end")

    first, second = chat.of("tool_result")
    assert first["payload"]["isError"] is True
    assert second["payload"]["isError"] is False
    assert chat.text() == "It is 5"
    error_sent = [m for m in llm.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert "validation" in error_sent.lower() or "error" in error_sent.lower()
    rows = await db(
        lambda: list(
            Message.objects.filter(role="tool").order_by("id").values_list("is_error", flat=True)
        )
    )()
    assert rows == [True, False]


async def test_an_anthropic_provider_runs_the_same_turn(
    hub, llm, alice, alice_endpoint, alice_hub_token
):
    await db(
        lambda: Provider.objects.create(
            name="claude",
            kind="anthropic",
            base_url=llm.url,
            default_model="scripted-model",
            owner=alice,
            is_default=True,
        )
    )()
    llm.script(
        [Reply(tool_calls=[("toolu_1", "add", {"a": 2, "b": 3})]), Reply(text=["2+3 is ", "5"])]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "add"})
            end = await chat.until("end")

    assert end["payload"]["status"] == "complete" and chat.text() == "2+3 is 5"
    assert chat.of("tool_result")[0]["payload"]["content"][0]["text"] == "5"
    result_block = llm.requests[1]["messages"][-1]["content"][0]
    assert (result_block["type"], result_block["tool_use_id"]) == ("tool_result", "toolu_1")
