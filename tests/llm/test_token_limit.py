"""OpenAI's reasoning models take `max_completion_tokens` instead of `max_tokens` (they refuse it)."""

import pytest

from apps.llm.adapters import adapter_class
from apps.llm.types import Finish, TextDelta
from tests.llm.conftest import HELLO
from tests.llm_server import Reply

pytestmark = pytest.mark.anyio
REFUSED = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."


async def _ask(adapter, model: str) -> list:
    return [e async for e in adapter.stream(model=model, messages=HELLO, tools=[], max_tokens=64)]


async def test_a_chat_model_is_sent_max_tokens(llm):
    llm.script([Reply(text=["hi"])])
    async with adapter_class("openai")(base_url=llm.url, api_key="sk-test", timeout=10) as adapter:
        await _ask(adapter, "gpt-4o")
    assert llm.requests[0]["max_tokens"] == 64 and "max_completion_tokens" not in llm.requests[0]


@pytest.mark.parametrize("model", ["o1", "o3-mini", "o4-mini", "gpt-5", "gpt-5-mini", "openai/o3"])
async def test_a_reasoning_model_is_sent_max_completion_tokens(llm, model):
    llm.script([Reply(text=["hi"])])
    async with adapter_class("openai")(base_url=llm.url, api_key="sk-test", timeout=10) as adapter:
        await _ask(adapter, model)
    assert llm.requests[0]["max_completion_tokens"] == 64 and "max_tokens" not in llm.requests[0]


async def test_a_server_refusing_max_tokens_is_asked_again_with_max_completion_tokens_and_remembered(
    llm,
):
    llm.script(
        [
            Reply(error=400, error_message=REFUSED, error_code="unsupported_parameter"),
            Reply(text=["hel", "lo"]),
            Reply(text=["again"]),
        ]
    )
    async with adapter_class("openai")(base_url=llm.url, api_key="sk-test", timeout=10) as adapter:
        first = await _ask(adapter, "house-reasoner")
        second = await _ask(adapter, "house-reasoner")

    assert first[:2] == [TextDelta("hel"), TextDelta("lo")] and first[-1] == Finish("stop")
    assert second[0] == TextDelta("again")
    sent = [(("max_tokens" in r), r.get("max_completion_tokens")) for r in llm.requests]
    assert sent == [(True, None), (False, 64), (False, 64)]  # the refusal is not repeated


async def test_another_bad_request_is_not_retried(llm):
    llm.script([Reply(error=400, error_message="messages: at least one message is required")])
    async with adapter_class("openai")(base_url=llm.url, api_key="sk-test", timeout=10) as adapter:
        with pytest.raises(Exception, match="at least one message"):
            await _ask(adapter, "gpt-4o")
    assert len(llm.requests) == 1
