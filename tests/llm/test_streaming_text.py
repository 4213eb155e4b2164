"""A plain text reply arrives as the provider streamed it, then usage, then the finish reason."""

import pytest

from apps.llm.types import Finish, TextDelta, Usage
from tests.llm.conftest import collect
from tests.llm_server import Reply

pytestmark = pytest.mark.anyio


async def test_text_arrives_in_the_streamed_chunks_then_usage_then_finish(adapter, llm):
    llm.script([Reply(text=["Hel", "lo", ", world"], usage=(42, 3))])

    events = await collect(adapter)

    assert events == [
        TextDelta("Hel"),
        TextDelta("lo"),
        TextDelta(", world"),
        Usage(42, 3),
        Finish("stop"),
    ]


async def test_each_chunk_is_yielded_while_the_provider_is_still_answering(adapter, llm):
    llm.script([Reply(text=["first", "second"], chunk_delay=0.3)])

    stream = adapter.stream(model="scripted-model", messages=[], tools=[])
    first = await anext(stream)

    # The server is still sleeping before "second": the first delta was not held back.
    assert first == TextDelta("first")
    assert llm.active == 1
    rest = [event async for event in stream]
    assert rest[0] == TextDelta("second")


async def test_a_reply_cut_by_the_token_limit_says_length(adapter, llm):
    llm.script([Reply(text=["It was a dark and"], finish="length")])

    events = await collect(adapter)

    assert events[-1] == Finish("length")


async def test_the_request_carries_the_history_and_tools_in_the_provider_format(adapter, llm, kind):
    llm.script([Reply(text=["hi"])])

    await collect(adapter)

    body = llm.requests[0]
    assert body["stream"] is True and body["model"] == "scripted-model"
    if kind == "openai":
        assert body["messages"][0] == {"role": "system", "content": "You are terse."}
        assert body["tools"][0]["function"]["name"] == "echo"
        assert body["stream_options"] == {"include_usage": True}
    else:
        assert body["system"] == "You are terse."
        assert body["messages"] == [
            {"role": "user", "content": [{"type": "text", "text": "Say hello"}]}
        ]
        assert body["tools"][0]["input_schema"]["required"] == ["text"]
