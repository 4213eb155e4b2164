"""Tool calls come out whole, however finely the provider split their arguments."""

import pytest

from apps.llm.types import Finish, TextDelta, ToolCall, Usage
from tests.llm.conftest import collect
from tests.llm_server import Reply

pytestmark = pytest.mark.anyio

LONG = {"text": "a fairly long argument " * 10, "nested": {"list": [1, 2, 3], "flag": True}}


async def test_arguments_split_across_many_deltas_are_assembled(adapter, llm):
    llm.script([Reply(tool_calls=[("call_1", "echo", LONG)], args_chunk=3)])

    events = await collect(adapter)

    assert events[0] == ToolCall(id="call_1", name="echo", arguments=LONG)
    assert isinstance(events[1], Usage)
    assert events[2] == Finish("tool_calls")
    assert len(events) == 3


async def test_several_calls_in_one_reply_keep_their_order_after_the_text(adapter, llm):
    llm.script(
        [
            Reply(
                text=["Let me ", "check"],
                tool_calls=[
                    ("call_a", "echo", {"text": "one"}),
                    ("call_b", "add", {"a": 1, "b": 2}),
                    ("call_c", "now", {}),
                ],
            )
        ]
    )

    events = await collect(adapter)

    assert events[:2] == [TextDelta("Let me "), TextDelta("check")]
    assert events[2:5] == [
        ToolCall("call_a", "echo", {"text": "one"}),
        ToolCall("call_b", "add", {"a": 1, "b": 2}),
        ToolCall("call_c", "now", {}),
    ]
    assert events[-1] == Finish("tool_calls")


async def test_invalid_json_arguments_are_reported_not_raised(adapter, llm):
    llm.script([Reply(tool_calls=[("call_1", "echo", '{"text": "unterminated')])])

    events = await collect(adapter)

    call = events[0]
    assert call.arguments == {}
    assert "not valid JSON" in call.arguments_error


async def test_the_history_of_a_tool_round_goes_back_in_the_provider_format(adapter, llm, kind):
    from apps.llm.types import Message

    call = ToolCall("call_1", "echo", {"text": "hi"})
    history = [
        Message(role="user", text="echo hi"),
        Message(role="assistant", text="Sure", tool_calls=(call,)),
        Message(role="tool", text="hi", tool_call_id="call_1"),
        Message(role="tool", text="boom", tool_call_id="call_2", is_error=True),
    ]
    llm.script([Reply(text=["done"])])

    await collect(adapter, messages=history)

    sent = llm.requests[0]["messages"]
    if kind == "openai":
        assert sent[1]["tool_calls"][0]["function"] == {
            "name": "echo",
            "arguments": '{"text": "hi"}',
        }
        assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": "hi"}
        assert sent[3]["content"].startswith("Error") and "boom" in sent[3]["content"]
    else:
        assert sent[1]["content"][1] == {
            "type": "tool_use",
            "id": "call_1",
            "name": "echo",
            "input": {"text": "hi"},
        }
        # Both results in the one user turn after the calls, as the Messages API requires.
        assert [block["tool_use_id"] for block in sent[2]["content"]] == ["call_1", "call_2"]
        assert sent[2]["content"][1]["is_error"] is True
        assert len(sent) == 3
