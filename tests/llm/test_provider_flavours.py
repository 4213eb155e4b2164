"""OpenAI-compatible servers as they really are (tests/llm_server.py FLAVOURS): their errors, their
tool-call deltas, their cold starts, and those that do not stream, read by the OpenAI adapter."""

from __future__ import annotations

import re
import time

import pytest

from apps.llm.adapters import adapter_class, retrying
from apps.llm.types import Finish, LLMError, ProviderStatus, TextDelta, ToolCall, Usage
from tests.llm.conftest import collect
from tests.llm_server import Reply, ScriptedLLM

pytestmark = pytest.mark.anyio

TWO_CALLS = [("c1", "echo", {"text": "héllo ☃ wörld"}), ("c2", "add", {"a": 2, "b": 3})]
EXPECTED = [
    ToolCall("c1", "echo", {"text": "héllo ☃ wörld"}),
    ToolCall("c2", "add", {"a": 2, "b": 3}),
]


async def _stream(
    flavour: str, replies: list[Reply], *, base: bool = False, **adapter_options
) -> tuple[list, ScriptedLLM]:
    with ScriptedLLM(flavour=flavour) as llm:
        llm.script(replies)
        async with adapter_class("openai")(
            base_url=llm.base if base else llm.url, api_key="k", **adapter_options
        ) as adapter:
            return await collect(adapter), llm


def _calls(events: list) -> list[ToolCall]:
    return [e for e in events if isinstance(e, ToolCall)]


# --- tool calls -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flavour", ["openai", "gemini", "ollama", "vllm", "llamacpp", "tgi", "nostream", "json-only"]
)
async def test_two_calls_come_out_whole_in_every_flavour(flavour):
    events, _ = await _stream(
        flavour, [Reply(text=["Let me ", "check"], tool_calls=TWO_CALLS, args_chunk=3)]
    )

    assert events[:2] == [TextDelta("Let me "), TextDelta("check")] or events[0] == TextDelta(
        "Let me check"
    )
    assert _calls(events) == EXPECTED
    assert events[-1] == Finish("tool_calls")


async def test_gemini_index_less_deltas_continue_the_call_they_belong_to():
    # A metadata-only delta, then per call: id + name + half the arguments, then the other half.
    events, _ = await _stream("gemini", [Reply(tool_calls=TWO_CALLS)])

    assert _calls(events) == EXPECTED  # not five calls with broken halves
    assert events[-1] == Finish("tool_calls")  # Gemini said "stop"; the calls are what matter


async def test_lm_studio_empty_ids_get_ids_of_their_own():
    events, _ = await _stream("lmstudio", [Reply(tool_calls=TWO_CALLS)])

    assert [(c.id, c.name, c.arguments) for c in _calls(events)] == [
        ("call_0", "echo", {"text": "héllo ☃ wörld"}),
        ("call_1", "add", {"a": 2, "b": 3}),
    ]


async def test_arguments_sent_as_an_object_are_taken_as_they_are():
    events, _ = await _stream("tgi", [Reply(tool_calls=TWO_CALLS)])

    assert _calls(events) == EXPECTED and all(c.arguments_error is None for c in _calls(events))


def test_a_whole_completion_with_object_arguments_is_read():
    from apps.llm.adapters.openai_compat import _reply_events

    events = _reply_events(
        {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "0",
                                "type": "function",
                                "function": {"name": "add", "arguments": {"a": 1, "b": 2}},
                            },
                            {
                                "id": "1",
                                "type": "function",
                                "function": {"name": "echo", "arguments": [1, 2]},
                            },
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ]
        }
    )

    assert events[0] == ToolCall("0", "add", {"a": 1, "b": 2})
    assert events[1].arguments == {} and "must be a JSON object" in events[1].arguments_error
    assert events[-1] == Finish("tool_calls")


# --- servers that do not stream ---------------------------------------------------------------------


async def test_a_server_refusing_to_stream_is_asked_without_streaming_and_remembered():
    with ScriptedLLM(flavour="nostream") as llm:
        llm.script([Reply(text=["first"], usage=(5, 1)), Reply(text=["second"])])
        async with adapter_class("openai")(base_url=llm.url, api_key="k") as adapter:
            first = await collect(adapter)
            second = await collect(adapter)

    assert first == [TextDelta("first"), Usage(5, 1), Finish("stop")]
    assert second[0] == TextDelta("second")
    # Refused once, then asked whole twice: the provider's adapter remembers the refusal for this model.
    assert [r.get("stream", False) for r in llm.requests] == [True, False, False]
    assert "stream_options" not in llm.requests[1]


async def test_a_server_answering_a_stream_request_with_json_gives_the_same_events():
    streamed, _ = await _stream("openai", [Reply(text=["Hi"], tool_calls=TWO_CALLS, usage=(3, 4))])
    whole, _ = await _stream("json-only", [Reply(text=["Hi"], tool_calls=TWO_CALLS, usage=(3, 4))])

    assert whole == streamed


# --- errors in every shape --------------------------------------------------------------------------


async def test_a_gemini_daily_quota_is_out_of_quota_in_googles_words():
    with pytest.raises(LLMError) as caught:
        await _stream("gemini", [Reply(error=429, error_code="daily_quota"), Reply(text=["never"])])

    assert caught.value.kind == "quota" and "out of quota" in caught.value.message
    assert "You exceeded your current quota" in caught.value.message
    assert "is the base URL right" not in caught.value.message


async def test_a_gemini_per_minute_limit_worded_as_quota_is_retried_when_google_says_when():
    # Google words its free tier's per-minute limit like a spent quota, and adds a RetryInfo.
    said = "You exceeded your current quota, please check your plan and billing details."
    events, llm = await _stream(
        "gemini", [Reply(error=429, retry_after=0, error_message=said), Reply(text=["fine"])]
    )

    assert events[0] == TextDelta("fine") and len(llm.requests) == 2


async def test_a_gemini_bad_request_quotes_google():
    with pytest.raises(LLMError) as caught:
        await _stream(
            "gemini",
            [Reply(error=400, error_message="API key not valid. Please pass a valid API key.")],
        )

    assert "API key not valid" in caught.value.message and caught.value.status == 400


@pytest.mark.parametrize(
    "body, expected",
    [
        (
            [
                {
                    "error": {
                        "code": 429,
                        "message": "Resource has been exhausted (e.g. check quota).",
                        "status": "RESOURCE_EXHAUSTED",
                    }
                }
            ],
            "Resource has been exhausted",
        ),  # Gemini's list
        (
            {
                "object": "error",
                "message": "max_tokens is too large",
                "type": "BadRequestError",
                "code": 400,
            },
            "max_tokens is too large",
        ),  # vLLM: top-level message
        ({"detail": "Not authenticated"}, "Not authenticated"),  # FastAPI servers
        (
            {
                "detail": [
                    {
                        "loc": ["body", "messages"],
                        "msg": "field required",
                        "type": "value_error.missing",
                    }
                ]
            },
            "field required",
        ),
        (
            {
                "error": "Input validation error: `inputs` must have less than 4096 tokens",
                "error_type": "validation",
            },
            "must have less than 4096 tokens",
        ),  # TGI
        (
            "upstream connect error or disconnect/reset before headers",
            "upstream connect error",
        ),  # plain text
        # A gateway quoting Google's error as JSON text inside its own.
        (
            {
                "error": {
                    "message": '{\n  "error": {\n    "code": 429,\n    "message": "Resource has been exhausted '
                    '(e.g. check quota).",\n    "status": "RESOURCE_EXHAUSTED"\n  }\n}\n',
                    "code": 429,
                }
            },
            "Resource has been exhausted",
        ),
        ("<html><body>502 Bad Gateway</body></html>", "is the base URL right?"),
    ],
)
def test_every_error_shape_yields_the_providers_words(body, expected):
    from apps.llm.adapters.errors import provider_message

    assert expected in provider_message(body)


@pytest.mark.parametrize("flavour", ["vllm", "lmstudio", "tgi", "llamacpp", "ollama"])
async def test_each_flavours_error_body_is_quoted(flavour):
    with pytest.raises(LLMError) as caught:
        await _stream(
            flavour,
            [Reply(error=400, error_message="This model's maximum context length is 4096 tokens")],
        )

    assert (
        "maximum context length is 4096" in caught.value.message
        and caught.value.kind == "bad_request"
    )


# --- cold starts ------------------------------------------------------------------------------------


@pytest.fixture
def waits(monkeypatch) -> list[float]:
    """The waits the adapter chose, recorded and then made short (a tenth)."""
    chosen: list[float] = []
    original = retrying.Attempts._pause

    async def pause(self, failure, wait):
        chosen.append(wait)
        await original(self, failure, wait / 10)

    monkeypatch.setattr(retrying.Attempts, "_pause", pause)
    return chosen


@pytest.mark.parametrize(
    "flavour, said",
    [
        ("llamacpp", "The model is loading"),
        ("lmstudio", "The model is loading"),
        ("ollama", "The provider is busy"),
    ],
)
async def test_a_cold_start_is_waited_out_with_backoff_saying_so(flavour, said, waits):
    events, llm = await _stream(flavour, [Reply(loading=True)] * 3 + [Reply(tool_calls=TWO_CALLS)])

    statuses = [e for e in events if isinstance(e, ProviderStatus)]
    assert len(statuses) == 3 and all(s.message.startswith(said) for s in statuses)
    assert events[:3] == statuses  # before anything of the reply
    assert [(c.name, c.arguments) for c in _calls(events)] == [
        (c.name, c.arguments) for c in EXPECTED
    ]
    assert waits == [0.5, 1.0, 2.0] and len(llm.requests) == 4


async def test_a_retry_after_sets_the_wait(waits):
    await _stream("llamacpp", [Reply(loading=True, retry_after=3), Reply(text=["ok"])])

    assert waits == [3.0]


async def test_a_model_still_loading_when_the_wait_is_over_is_reported(settings, waits):
    settings.MCPHUB_LLM_LOADING_WAIT = 2
    with pytest.raises(LLMError) as caught:
        await _stream("llamacpp", [Reply(loading=True)] * 10)

    assert sum(waits) == pytest.approx(2.0)
    assert caught.value.kind == "unavailable"
    assert (
        "still loading" in caught.value.message and "after 2 s of waiting" in caught.value.message
    )
    assert "Loading model" in caught.value.message


# --- a reply cut short ------------------------------------------------------------------------------


async def test_a_reply_cut_short_says_how_much_had_arrived():
    started = time.monotonic()
    with pytest.raises(LLMError) as caught:
        await _stream(
            "openai",
            [Reply(text=["one ", "two ", "three ", "four"], close_after=3), Reply(text=["no"])],
        )

    error = caught.value
    assert error.received_chars == len("one two ")
    assert error.message.startswith(
        "The reply was cut off after 8 characters: the connection to the provider"
    )
    # No low-level words: the transport's own, or an HTTP status (the provider's address, whose
    # random port may well hold "400", is left out of the check).
    words = re.sub(r"https?://\S+", "", error.message)
    assert "transfer length" not in words and "400" not in words
    assert time.monotonic() - started < 10


# --- Ollama without /v1 -----------------------------------------------------------------------------


async def test_ollamas_own_api_says_add_v1():
    with ScriptedLLM(flavour="ollama") as llm:
        async with adapter_class("openai")(base_url=llm.base, api_key=None) as adapter:
            with pytest.raises(LLMError) as listing:
                await adapter.list_models()
            with pytest.raises(LLMError) as chatting:
                await collect(adapter)

    for caught in (listing, chatting):
        assert (
            "Ollama's own API" in caught.value.message and f"{llm.base}/v1" in caught.value.message
        )
        assert caught.value.kind == "bad_request"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url, refused",
    [
        ("http://127.0.0.1:11434", True),
        ("http://ollama:11434/", True),
        ("http://127.0.0.1:11434/v1", False),
        ("http://127.0.0.1:1234/v1", False),
    ],
)
def test_saving_ollama_without_v1_says_add_it(url, refused):
    from django.core.exceptions import ValidationError

    from apps.llm.models import Provider

    provider = Provider(name="o", kind="openai", base_url=url)
    if refused:
        with pytest.raises(ValidationError) as caught:
            provider.full_clean()
        assert "under /v1" in str(caught.value) and f"{url.rstrip('/')}/v1" in str(caught.value)
    else:
        provider.full_clean()
