"""The scripted LLM speaks the services' wire formats: raw bytes checked here, and the official
SDKs' non-streaming calls parse its answers (the streaming ones are the adapter tests)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import anthropic
import openai
import pytest

from tests.llm_server import Reply

pytestmark = pytest.mark.anyio


def _post(url: str, body: dict, headers: dict | None = None) -> tuple[dict, str]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json", **(headers or {})}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return dict(response.headers), response.read().decode()


def test_openai_stream_is_data_lines_with_usage_only_when_asked_then_done(llm):
    llm.script([Reply(text=["Hi"], tool_calls=[("call_1", "echo", {"a": 1})]), Reply(text=["Hi"])])

    headers, with_usage = _post(
        f"{llm.url}/chat/completions",
        {"model": "m", "stream": True, "messages": [], "stream_options": {"include_usage": True}},
    )
    _, without = _post(
        f"{llm.url}/chat/completions", {"model": "m", "stream": True, "messages": []}
    )

    assert (
        headers["Content-Type"].startswith("text/event-stream")
        and headers["Transfer-Encoding"] == "chunked"
    )
    events = [line.removeprefix("data: ") for line in with_usage.split("\n\n") if line]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[2]["choices"][0]["delta"]["tool_calls"][0] == {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "echo", "arguments": ""},
    }
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0
    assert '"usage"' not in without


def test_anthropic_stream_is_named_events_in_the_documented_order(llm):
    llm.script([Reply(text=["Hi"], tool_calls=[("toolu_1", "echo", {"a": 1})])])

    _, raw = _post(
        f"{llm.base}/v1/messages",
        {"model": "m", "max_tokens": 10, "stream": True, "messages": []},
        {"anthropic-version": "2023-06-01"},
    )

    names = [block.split("\n")[0].removeprefix("event: ") for block in raw.split("\n\n") if block]
    assert names == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    last_delta = json.loads(raw.split("event: message_delta\ndata: ")[1].split("\n")[0])
    assert last_delta["delta"]["stop_reason"] == "tool_use"


async def test_the_official_sdks_parse_whole_replies(llm):
    llm.script([Reply(text=["Hello"], tool_calls=[("c1", "echo", {"text": "x"})])] * 2)
    oai = openai.AsyncOpenAI(base_url=llm.url, api_key="k", max_retries=0)
    ant = anthropic.AsyncAnthropic(base_url=llm.base, api_key="k", max_retries=0)

    completion = await oai.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    message = await ant.messages.create(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    await oai.close()
    await ant.close()

    choice = completion.choices[0]
    assert choice.message.content == "Hello" and choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls[0].function.arguments == '{"text": "x"}'
    assert [block.type for block in message.content] == ["text", "tool_use"]
    assert message.content[1].input == {"text": "x"} and message.stop_reason == "tool_use"


def test_an_http_error_comes_in_the_providers_shape_with_retry_after(llm):
    llm.script([Reply(error=429, retry_after=2)])
    request = urllib.request.Request(
        f"{llm.url}/chat/completions", b'{"model": "m"}', {"Content-Type": "application/json"}
    )

    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)

    assert caught.value.code == 429 and caught.value.headers["retry-after"] == "2"
    assert json.loads(caught.value.read())["error"]["code"] == "rate_limit_exceeded"
