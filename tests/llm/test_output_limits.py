"""Anthropic requires max_tokens: a reply may use the model's own output limit, not a fixed 4,096."""

import pytest

from apps.llm.adapters import adapter_class
from apps.llm.adapters.base import Tuning
from apps.llm.types import Finish, TextDelta
from tests.llm.conftest import HELLO
from tests.llm_server import Reply

pytestmark = pytest.mark.anyio


async def _ask(adapter, model: str) -> list:
    return [e async for e in adapter.stream(model=model, messages=HELLO, tools=[])]


async def test_a_claude_model_gets_its_whole_output_limit_and_a_long_answer_is_not_cut(llm):
    llm.script([Reply(text=["word " * 2000], tokens=10_000), Reply(text=["again"])])
    async with adapter_class("anthropic")(base_url=llm.url, api_key="k", timeout=10) as adapter:
        events = await _ask(adapter, "claude-sonnet-4-5")
        await _ask(adapter, "claude-sonnet-4-5")
    assert [r["max_tokens"] for r in llm.requests] == [64000, 64000]
    assert (
        events[-1] == Finish("stop")
        and "".join(e.text for e in events if isinstance(e, TextDelta)) == "word " * 2000
    )


async def test_the_model_list_says_the_limit_and_a_provider_setting_overrides_it(llm):
    llm.output_limits = {"claude-future-9": 128000}
    llm.script([Reply(text=["a"]), Reply(text=["b"])])
    async with adapter_class("anthropic")(base_url=llm.url, api_key="k", timeout=10) as adapter:
        await _ask(adapter, "claude-future-9")
    async with adapter_class("anthropic")(
        base_url=llm.url, api_key="k", timeout=10, tuning=Tuning(max_output_tokens=500)
    ) as adapter:
        await _ask(adapter, "claude-future-9")
    assert [r["max_tokens"] for r in llm.requests] == [128000, 500]


async def test_a_model_that_allows_less_is_asked_again_with_its_limit_once(llm):
    refused = "max_tokens: 32000 > 8192, which is the maximum allowed number of output tokens for some-model"
    llm.script([Reply(error=400, error_message=refused), Reply(text=["hi"]), Reply(text=["again"])])
    async with adapter_class("anthropic")(base_url=llm.url, api_key="k", timeout=10) as adapter:
        events = await _ask(adapter, "some-model")
        await _ask(adapter, "some-model")
    assert [r["max_tokens"] for r in llm.requests] == [32000, 8192, 8192]
    assert events[-1] == Finish("stop")


async def test_a_reply_cut_at_the_limit_says_so(llm):
    llm.script([Reply(text=["word " * 100], tokens=1000)])
    async with adapter_class("anthropic")(
        base_url=llm.url, api_key="k", timeout=10, tuning=Tuning(max_output_tokens=100)
    ) as adapter:
        events = await _ask(adapter, "claude-sonnet-4-5")
    assert events[-1] == Finish("length")
