"""Alice chats with reasoning models, models that sign their tool calls, replies cut at the output
limit and refusals, as each product sends them, through the real hub: a two-tool turn each."""

from __future__ import annotations

import pytest

from apps.chat.models import Message
from apps.llm.models import Provider
from tests.chat.conftest import Api, chat_socket, db
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


async def test_a_two_tool_turn(
    hub, llm, flavour, flavour_provider, alice_endpoint, alice_hub_token
):
    llm.script(flavour.replies())
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "Use the tools"})
            end = await chat.until("end")
        history = (await api.client.get(f"/conversations/{conversation}/messages/")).json()[
            "results"
        ]

    assert not chat.of("error"), chat.of("error")
    assert end["payload"]["status"] == flavour.turn_status
    # The two calls run at once: their results arrive in either order.
    results = {
        r["payload"]["name"]: r["payload"]["content"][0]["text"] for r in chat.of("tool_result")
    }
    assert results == {"echo": "hi", "add": "5"}
    assert len(llm.requests) == 2
    flavour.sent(llm.requests)
    # The model's thinking streamed apart from its answer, and is kept with the turn.
    assert "".join(e["payload"]["text"] for e in chat.of("reasoning")) == flavour.reasoning
    assistant = [m for m in history if m["role"] == "assistant"]
    assert "".join(m["reasoning"] for m in assistant) == flavour.reasoning
    assert assistant[-1]["finish_reason"] == flavour.finish_reason
    if flavour.finish_reason == "refusal":
        assert assistant[-1]["text"] == flavour.answer
        assert len(chat.of("refusal")) == 1
        assert chat.text() + chat.of("refusal")[0]["payload"]["text"] == flavour.answer
    else:
        assert chat.text() == flavour.answer
    # What goes back to the provider is never shown.
    assert all("replay" not in m and "extra_content" not in str(m) for m in history)


async def test_deepseek_refuses_a_history_without_the_reasoning_of_its_tool_calls(
    hub, llm, alice, alice_endpoint, alice_hub_token
):
    """The scripted DeepSeek is as strict as the real one: a tool-call message without its
    reasoning gets its 400 — so the turn above would fail if the hub dropped the reasoning."""
    await db(
        lambda: Provider.objects.create(
            name="deepseek",
            kind="openai",
            base_url=llm.url,
            default_model="deepseek-reasoner",
            owner=alice,
            is_default=True,
        )
    )()
    llm.script(
        [
            Reply(tool_calls=[("c1", "add", {"a": 2, "b": 3})]),
            Reply(text=["5"], require=["reasoning_content"]),
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "add"})
            end = await chat.until("end")

    assert end["payload"]["status"] == "failed"
    assert (
        "Missing `reasoning_content` field in the assistant message at message index 1"
        in chat.of("error")[0]["payload"]["message"]
    )


async def test_deepseek_gets_back_the_reasoning_of_an_earlier_turns_tool_calls(
    hub, llm, alice, alice_endpoint, alice_hub_token
):
    await db(
        lambda: Provider.objects.create(
            name="deepseek",
            kind="openai",
            base_url=llm.url,
            default_model="deepseek-reasoner",
            owner=alice,
            is_default=True,
        )
    )()
    llm.script(
        [
            Reply(
                reasoning=["I add."],
                tool_calls=[("c1", "add", {"a": 2, "b": 3})],
                require=["reasoning_content"],
            ),
            Reply(reasoning=["Done."], text=["5"], require=["reasoning_content"]),
            Reply(reasoning=["Easy."], text=["10"], require=["reasoning_content"]),
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "add"})
            await chat.until("end")
            await chat.send("message", {"text": "double it"})
            end = await chat.until("end")

    assert end["payload"]["status"] == "complete" and not chat.of("error")
    # Every tool-call message carries its reasoning (a plain answer's is not asked for).
    assert [
        m.get("reasoning_content") for m in llm.requests[2]["messages"] if m["role"] == "assistant"
    ] == ["I add.", None]


async def test_a_cut_turn_continues_and_a_broken_stream_keeps_what_was_shown(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.script(
        [
            Reply(text=["The first half, "], finish="length"),
            Reply(text=["and the second half."]),
            Reply(text=["Partial ", "words ", "then"], cut_after=3),
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "Write it"})
            cut = await chat.until("end")
            await chat.send("message", {"text": "Continue"})
            continued = await chat.until("end")
            await chat.send("message", {"text": "Once more"})
            broken = await chat.until("end")
        history = (await api.client.get(f"/conversations/{conversation}/messages/")).json()[
            "results"
        ]

    assert (
        cut["payload"]["status"],
        continued["payload"]["status"],
        broken["payload"]["status"],
    ) == ("incomplete", "complete", "failed")
    # The model went on from its partial answer, which it was sent back.
    assert [m["content"] for m in llm.requests[1]["messages"]][-2:] == [
        "The first half, ",
        "Continue",
    ]
    assert [
        (m["role"], m["text"], m["finish_reason"]) for m in history if m["role"] == "assistant"
    ] == [
        ("assistant", "The first half, ", "length"),
        ("assistant", "and the second half.", ""),
        ("assistant", "Partial words ", "error"),
    ]
    rows = await db(
        lambda: list(
            Message.objects.filter(role="assistant").values_list("finish_reason", flat=True)
        )
    )()
    assert rows == ["length", "", "error"]
