"""Provider failures become one clear LLMError; a transient one is retried once, and only once."""

import socket

import pytest

from apps.llm.adapters import adapter_class
from apps.llm.types import Finish, LLMError, TextDelta
from tests.llm.conftest import collect
from tests.llm_server import Reply, ScriptedLLM

pytestmark = pytest.mark.anyio


async def test_a_wrong_api_key_says_so(kind):
    with ScriptedLLM(api_key="the-right-key") as llm:
        async with adapter_class(kind)(base_url=llm.url, api_key="a-wrong-key") as adapter:
            with pytest.raises(LLMError) as caught:
                await collect(adapter)

    assert caught.value.kind == "auth" and caught.value.status == 401
    assert "rejected the API key" in str(caught.value)
    assert len(llm.requests) == 1  # never retried


async def test_429_then_success_is_retried_once_and_the_user_sees_only_the_answer(adapter, llm):
    llm.script([Reply(error=429, retry_after=0), Reply(text=["fine"])])

    events = await collect(adapter)

    assert events[0] == TextDelta("fine") and events[-1] == Finish("stop")
    assert len(llm.requests) == 2


async def test_429_twice_is_a_clear_rate_limit_error(adapter, llm):
    llm.script(
        [Reply(error=429, retry_after=0), Reply(error=429, retry_after=0), Reply(text=["never"])]
    )

    with pytest.raises(LLMError) as caught:
        await collect(adapter)

    assert caught.value.kind == "rate_limit" and "rate-limiting" in str(caught.value)
    assert len(llm.requests) == 2 and llm.pending == 1


async def test_500_twice_is_a_clear_error_after_exactly_one_retry(adapter, llm):
    llm.script([Reply(error=500), Reply(error=500), Reply(text=["never"])])

    with pytest.raises(LLMError) as caught:
        await collect(adapter)

    assert caught.value.kind == "unavailable" and caught.value.status == 500
    assert "also on a retry" in str(caught.value)
    assert len(llm.requests) == 2


async def test_a_reset_connection_is_retried(adapter, llm):
    llm.script([Reply(drop=True), Reply(text=["after the reset"])])

    events = await collect(adapter)

    assert events[0] == TextDelta("after the reset")


async def test_a_reply_cut_off_mid_stream_is_not_retried(adapter, llm):
    # Both formats have sent at least one text delta by their fourth chunk.
    llm.script(
        [
            Reply(text=["one", "two", "three", "four", "five"], cut_after=4),
            Reply(text=["a second answer"]),
        ]
    )

    with pytest.raises(LLMError) as caught:
        await collect(adapter)

    assert "cut off" in str(caught.value)
    assert len(llm.requests) == 1  # a retry would repeat text the user already saw


async def test_connection_refused_names_the_address(kind):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    async with adapter_class(kind)(base_url=url, api_key=None) as adapter:
        with pytest.raises(LLMError) as caught:
            await collect(adapter)

    assert caught.value.kind == "unavailable"
    assert f"Cannot reach the provider at {url}" in str(caught.value)
    assert "refused" in str(caught.value).lower()


async def test_an_unknown_model_says_which_and_what_to_do(kind):
    with ScriptedLLM(models=["scripted-model"]) as llm:
        async with adapter_class(kind)(base_url=llm.url, api_key="k") as adapter:
            with pytest.raises(LLMError) as caught:
                await collect(adapter, model="gpt-imaginary")

    assert caught.value.kind == "model"
    assert "'gpt-imaginary' is not available" in str(caught.value)
    assert "model list" in str(caught.value)


async def test_an_exhausted_quota_is_not_retried(adapter, llm):
    llm.script(
        [
            Reply(
                error=429,
                error_code="insufficient_quota",
                error_message="You exceeded your current quota.",
            )
        ]
    )

    with pytest.raises(LLMError) as caught:
        await collect(adapter)

    assert caught.value.kind == "quota" and "quota" in str(caught.value)
    assert len(llm.requests) == 1


async def test_an_error_inside_the_stream_before_any_text_is_retried(adapter, llm):
    # Anthropic's overloaded_error event / OpenAI's {"error": ...} chunk, right after the stream opened.
    llm.script([Reply(text=["never seen"], error_after=1), Reply(text=["second try"])])

    events = await collect(adapter)

    assert events[0] == TextDelta("second try")
    assert len(llm.requests) == 2


async def test_an_error_inside_the_stream_after_text_says_the_reply_was_cut_off(adapter, llm):
    llm.script(
        [
            Reply(
                text=["one", "two", "three", "four", "five"],
                error_after=5,
                error_message="Overloaded",
            )
        ]
    )

    with pytest.raises(LLMError) as caught:
        await collect(adapter)

    assert str(caught.value).startswith("The reply was cut off") and "Overloaded" in str(
        caught.value
    )
    assert caught.value.kind == "unavailable"
    assert len(llm.requests) == 1


async def test_a_model_slower_than_the_timeout_is_reported_not_retried(kind, llm):
    llm.script([Reply(text=["too late"], delay=3.0), Reply(text=["never"])])

    async with adapter_class(kind)(base_url=llm.url, api_key="k", timeout=0.5) as adapter:
        with pytest.raises(LLMError) as caught:
            await collect(adapter)

    assert "did not answer within 0.5 s" in str(caught.value)
    assert len(llm.requests) == 1


async def test_a_wrong_base_url_is_not_blamed_on_the_model(llm):
    async with adapter_class("openai")(base_url=llm.base, api_key="k") as adapter:  # /v1 missing
        with pytest.raises(LLMError) as caught:
            await collect(adapter)

    assert caught.value.kind == "bad_request"
    assert "is the base URL right?" in str(caught.value)


@pytest.mark.parametrize(
    "body, expected",
    [
        ({"error": {"message": "Invalid model", "type": "invalid_request_error"}}, "Invalid model"),
        (
            {"error": "model 'qwen' not found, try pulling it first"},
            "try pulling it first",
        ),  # Ollama's shape
        ("<html><body>Internal admin console: secret=1</body></html>", "is the base URL right?"),
    ],
)
def test_only_an_llm_apis_own_error_words_are_repeated(body, expected):
    from apps.llm.adapters.errors import provider_message

    said = provider_message(body)

    assert expected in said and "secret" not in said
