"""OpenAI-compatible chat completions (OpenAI, LM Studio, Ollama, vLLM, llama.cpp server) on the `openai` SDK."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from apps.llm.adapters import register
from apps.llm.adapters.assembly import PartialCall
from apps.llm.adapters.base import NO_KEY, Adapter, Tuning, sdk_http_client
from apps.llm.adapters.errors import provider_message
from apps.llm.adapters.retrying import Attempts
from apps.llm.media import OPENAI_AUDIO_FORMATS
from apps.llm.types import (
    Event,
    Finish,
    LLMError,
    Message,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolSpec,
    Usage,
)

# A 400 refusing `stream: true`: OpenAI's o1 at launch ("Unsupported value: 'stream' does not support
# true with this model", param "stream"), and servers or gateways that cannot stream ("Streaming is
# not supported"). Such a model is asked without streaming from then on, by this provider's adapter
# (one per provider and event loop, apps/chat/providers.py: a provider saved since asks again).
_NO_STREAMING = re.compile(
    r"\bstream(ing)?\b.{0,60}(not supported|unsupported|does not support|not available|"
    r"only the default)|(not support|unsupported|cannot).{0,40}\bstream",
    re.I | re.S,
)

# OpenAI's reasoning models (o1, o3, o4-mini, the gpt-5 family) refuse `max_tokens` and take
# `max_completion_tokens`; other OpenAI-compatible servers (LM Studio, Ollama, vLLM) know `max_tokens`.
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)", re.IGNORECASE)
# The reasoning text of a reply, under the name its server used: DeepSeek, Kimi, vLLM and llama.cpp
# say `reasoning_content`; OpenRouter, Ollama and newer vLLM `reasoning`. DeepSeek and Kimi refuse
# a history whose assistant tool-call messages lack their `reasoning_content` — in every later
# request, not only the turn's own (DeepSeek's thinking-mode guide); elsewhere they ignore it.
_REASONING_TEXT = ("reasoning_content", "reasoning")


@register
class OpenAIAdapter(Adapter):
    kind = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None,
        timeout: float = 120.0,
        tuning: Tuning | None = None,
        public_only: bool = False,
    ) -> None:
        super().__init__(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            tuning=tuning,
            public_only=public_only,
        )
        # max_retries=0: the one retry is ours (retrying.py), so its behaviour is tested, not the SDK's.
        timeouts = openai.Timeout(timeout, connect=min(timeout, 10.0))
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=self.api_key or NO_KEY,
            max_retries=0,
            timeout=timeouts,
            http_client=sdk_http_client(openai, timeouts, public_only=public_only),
        )
        self._attempts = Attempts(sdk=openai, base_url=base_url, timeout=timeout)
        # Models whose server refused `max_tokens` once: asked with `max_completion_tokens` from then on.
        self._completion_tokens: set[str] = set()
        # Models whose server refused `stream: true` once: asked for whole replies from then on.
        self._whole_replies: set[str] = set()

    def stream(
        self,
        *,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        max_tokens: int | None = None,
        patience: float = 0.0,
        temperature: float | None = None,
        stop: Sequence[str] = (),
    ) -> AsyncIterator[Event]:
        request: dict[str, Any] = {
            "model": model,
            "messages": [_message(m) for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            request["tools"] = [_tool(t) for t in tools]
        max_tokens = max_tokens or self.tuning.max_output_tokens
        if max_tokens:
            request[self._token_limit_key(model)] = max_tokens
        if self.tuning.reasoning_effort:
            request["reasoning_effort"] = self.tuning.reasoning_effort
        if temperature is not None:
            request["temperature"] = temperature
        if stop:
            request["stop"] = list(stop)
        return self._attempts.stream(lambda: self._events(request), model=model, patience=patience)

    def _token_limit_key(self, model: str) -> str:
        name = model.rsplit("/", 1)[-1]  # "openai/o3-mini" through a router
        return (
            "max_completion_tokens"
            if _REASONING_MODEL.match(name) or model in self._completion_tokens
            else "max_tokens"
        )

    async def _events(self, request: dict[str, Any]) -> AsyncIterator[Event]:
        try:
            stream = None if request["model"] in self._whole_replies else await self._open(request)
        except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
            if not _refuses_streaming(exc):
                raise
            self._whole_replies.add(request["model"])
            stream = None
        except openai.NotFoundError:
            await self._explain_not_found()
            raise
        if stream is None or not _is_event_stream(stream):
            # Refused streaming, or answered a stream request with one JSON completion anyway.
            reply = await self._whole(request) if stream is None else await _read_json(stream)
            for event in _reply_events(reply):
                yield event
            return
        calls: dict[int, PartialCall] = {}
        kept = Kept()
        usage: Usage | None = None
        reason: str | None = None
        try:
            async for chunk in stream:
                if chunk.get("usage"):
                    usage = Usage(
                        chunk["usage"].get("prompt_tokens") or 0,
                        chunk["usage"].get("completion_tokens") or 0,
                    )
                for choice in (chunk.get("choices") or ())[:1]:
                    delta = choice.get("delta") or {}
                    if thought := kept.keep(delta):
                        yield ReasoningDelta(thought)
                    if delta.get("content"):
                        yield TextDelta(delta["content"])
                    for fragment in delta.get("tool_calls") or ():
                        kept.call_fields(fragment)
                        _add_fragment(calls, fragment)
                    reason = choice.get("finish_reason") or reason
        finally:
            await stream.close()
        for position, index in enumerate(
            index for index in sorted(calls) if not calls[index].empty
        ):
            yield kept.with_call_fields(calls[index].finish(fallback_id=f"call_{position}"))
        if usage is not None:
            yield usage
        yield _finish(reason, called=bool(calls), kept=kept)

    async def _open(self, request: dict[str, Any]) -> openai.AsyncStream[dict[str, Any]]:
        try:
            return await self._post(request)
        except openai.BadRequestError as exc:
            if "max_tokens" not in request or "max_completion_tokens" not in str(exc):
                raise
            # A reasoning model the name did not give away: say it the way its server asks, once.
            self._completion_tokens.add(request["model"])
            request.update(max_completion_tokens=request.pop("max_tokens"))
            return await self._post(request)

    async def _whole(self, request: dict[str, Any]) -> Any:
        """The reply of a server that does not stream, asked for in one piece."""
        body = {
            key: value for key, value in request.items() if key not in ("stream", "stream_options")
        }
        return await self._client.post(
            "/chat/completions",
            body=body,
            cast_to=object,
            options={"security": {"bearer_auth": True}},
        )

    async def _explain_not_found(self) -> None:
        """Ollama's own API answers a base URL without /v1 with 404s: say what to change. Raises
        LLMError when it is Ollama's; returns otherwise (the 404 then speaks for itself)."""
        root = self.base_url.rstrip("/")
        if root.endswith("/v1"):
            return
        try:
            tags = await self._client.get(
                "/api/tags", cast_to=object, options={"timeout": min(self.timeout, 5.0)}
            )
        except Exception:  # noqa: BLE001 - not Ollama, or not answering: the 404 stands
            return
        if isinstance(tags, dict) and isinstance(tags.get("models"), list):
            raise LLMError(
                f"{root} answers with Ollama's own API; its OpenAI-compatible API is at {root}/v1: "
                "add /v1 to the provider's base URL.",
                kind="bad_request",
                status=404,
            )

    async def _post(self, request: dict[str, Any]) -> openai.AsyncStream[dict[str, Any]]:
        # The SDK's own request path and stream, without `chat.completions.create()`: it walks every
        # message through a type-driven transform (~0.2 ms each, 20 ms per request at 100 messages,
        # all of it CPU on the loop) that changes nothing in the wire-format dicts built here. Chunks
        # come as the SDK's parsed JSON (`object`: its documented raw-data cast) rather than
        # ChatCompletionChunk models, whose construction was a third of a round's CPU in the SDK.
        return await self._client.post(
            "/chat/completions",
            body=request,
            cast_to=ChatCompletion,
            stream=True,
            stream_cls=openai.AsyncStream[object],
            options={"security": {"bearer_auth": True}},
        )

    async def list_models(self, *, retry: bool = True) -> list[str]:
        async def fetch() -> list[str]:
            try:
                return sorted([model.id async for model in self._client.models.list()])
            except openai.NotFoundError:
                await self._explain_not_found()
                raise

        return await self._attempts.call(fetch, retry=retry)

    async def aclose(self) -> None:
        await self._client.close()


def _add_fragment(calls: dict[int, PartialCall], delta: dict[str, Any]) -> None:
    index = delta.get("index")
    function = delta.get("function") or {}
    if isinstance(index, int):
        call = calls.setdefault(index, PartialCall())
    else:
        call = _indexless(calls, delta.get("id") or "", function.get("name") or "")
    call.id = call.id or (delta.get("id") or "")
    call.name = call.name or (function.get("name") or "")
    call.add(function.get("arguments"))


def _indexless(calls: dict[int, PartialCall], call_id: str, name: str) -> PartialCall:
    """The call a delta without `index` belongs to. One that names a call (id or name) starts it —
    Ollama sends each call whole that way — unless the current call has neither yet (a
    metadata-only delta opened it); one that names none continues the current call, as Gemini
    streams a call's arguments over several deltas."""
    current = calls[max(calls)] if calls else None
    if current is not None:
        same = bool(call_id) and current.id == call_id
        names_another = bool(call_id or name) and bool(current.id or current.name) and not same
        if not names_another:
            return current
    return calls.setdefault(max(calls, default=-1) + 1, PartialCall())


def _refuses_streaming(exc: openai.APIStatusError) -> bool:
    body = exc.body if isinstance(exc.body, dict) else {}
    return body.get("param") == "stream" or bool(_NO_STREAMING.search(provider_message(exc.body)))


def _is_event_stream(stream: openai.AsyncStream[Any]) -> bool:
    return "json" not in stream.response.headers.get("content-type", "")


async def _read_json(stream: openai.AsyncStream[Any]) -> Any:
    try:
        return json.loads(await stream.response.aread())
    except ValueError:
        return None  # _reply_events says it is not a chat completion
    finally:
        await stream.close()


def _reply_events(reply: Any) -> list[Event]:
    """The events of one whole chat completion, as its stream would have given them."""
    if not isinstance(reply, dict):
        raise LLMError(
            "The provider answered with something other than a chat completion.", kind="bad_request"
        )
    choice = (reply.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    kept = Kept()
    thought = kept.keep(
        message
    )  # a whole message carries its reasoning and refusal as a delta would
    events: list[Event] = [ReasoningDelta(thought)] if thought else []
    if message.get("content"):
        events.append(TextDelta(message["content"]))
    calls = []
    for raw in message.get("tool_calls") or ():
        kept.call_fields(raw)
        function = raw.get("function") or {}
        call = PartialCall(id=raw.get("id") or "", name=function.get("name") or "")
        call.add(function.get("arguments"))
        calls.append(call)
    events += [
        kept.with_call_fields(call.finish(fallback_id=f"call_{position}"))
        for position, call in enumerate(calls)
    ]
    if reply.get("usage"):
        events.append(
            Usage(
                reply["usage"].get("prompt_tokens") or 0,
                reply["usage"].get("completion_tokens") or 0,
            )
        )
    events.append(_finish(choice.get("finish_reason"), called=bool(calls), kept=kept))
    return events


def _finish(reason: str | None, *, called: bool, kept: Kept) -> Finish:
    # Some servers (older Ollama) say "stop" after calling tools; the calls are what matter.
    reason = "tool_calls" if called and reason in (None, "stop") else reason or "stop"
    return Finish(
        "refusal" if kept.refusal and reason == "stop" else reason,
        refusal=kept.refusal,
        replay=kept.replay(),
    )


class Kept:
    """What of a streamed reply must go back to the provider as it came: reasoning text under its
    own name, OpenRouter's `reasoning_details` (merged by index), each call's extra fields (Gemini 3's
    `extra_content.google.thought_signature`); and the refusal, when the model refused."""

    def __init__(self) -> None:
        self.texts: dict[str, list[str]] = {}
        self.details: dict[int, dict[str, Any]] = {}
        self.calls: dict[str, dict[str, Any]] = {}
        self.refusals: list[str] = []
        self._call_id = ""

    def keep(self, delta: dict[str, Any]) -> str:
        """Keeps the delta's reasoning fields and refusal; returns the reasoning text to show ("" if none)."""
        shown = ""
        for name in _REASONING_TEXT:
            if isinstance(delta.get(name), str) and delta[name]:
                self.texts.setdefault(name, []).append(delta[name])
                shown = shown or delta[name]  # a server sending both says the same thing twice
        for position, detail in enumerate(delta.get("reasoning_details") or ()):
            if isinstance(detail, dict):
                text = self._detail(detail, position)
                shown = shown or text
        if isinstance(delta.get("refusal"), str):
            self.refusals.append(delta["refusal"])
        return shown

    def _detail(self, detail: dict[str, Any], position: int) -> str:
        index = detail["index"] if isinstance(detail.get("index"), int) else position
        kept = self.details.setdefault(index, {})
        for key, value in detail.items():
            # Streamed pieces of one detail continue its strings (text, summary, data); the rest is whole.
            both_text = (
                isinstance(value, str)
                and isinstance(kept.get(key), str)
                and key in ("text", "summary", "data")
            )
            kept[key] = kept[key] + value if both_text else value
        return (
            str(detail.get("text") or detail.get("summary") or "")
            if detail.get("type") != "reasoning.encrypted"
            else ""
        )

    def call_fields(self, fragment: dict[str, Any]) -> None:
        self._call_id = fragment.get("id") or self._call_id
        extra = {k: v for k, v in fragment.items() if k not in ("index", "id", "type", "function")}
        if extra:
            self.calls.setdefault(self._call_id, {}).update(extra)

    def with_call_fields(self, call: ToolCall) -> ToolCall:
        extra = self.calls.get(call.id)
        return dataclasses.replace(call, replay=extra) if extra else call

    @property
    def refusal(self) -> str:
        return "".join(self.refusals)

    def replay(self) -> dict[str, Any] | None:
        fields: dict[str, Any] = {name: "".join(parts) for name, parts in self.texts.items()}
        if self.details:
            fields["reasoning_details"] = [self.details[i] for i in sorted(self.details)]
        return fields or None


def _message(message: Message) -> dict[str, Any]:
    if message.role == "user" and message.send_media and (message.images or message.audio):
        return {"role": "user", "content": _parts(message)}
    if message.role == "tool":
        text = f"Error: {message.text}" if message.is_error else message.text
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": text}
    if message.role != "assistant" or not message.tool_calls:
        # A plain answer's reasoning is not asked back by anyone (DeepSeek ignores it), and some
        # servers (older vLLM) refuse fields they do not know: it stays home.
        return {"role": message.role, "content": message.text}
    replay = message.replay or {}  # as the provider sent it (see Kept)
    return {
        "role": "assistant",
        "content": message.text or None,
        "tool_calls": [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                **(c.replay or {}),
            }
            for c in message.tool_calls
        ],
        **replay,
    }


def _parts(message: Message) -> list[dict[str, Any]]:
    """A user message's text, images (data URLs) and audio as content parts."""
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    parts += [
        {"type": "image_url", "image_url": {"url": f"data:{i.mime_type};base64,{i.data}"}}
        for i in message.images
    ]
    parts += [
        {
            "type": "input_audio",
            "input_audio": {"data": a.data, "format": OPENAI_AUDIO_FORMATS.get(a.mime_type, "wav")},
        }
        for a in message.audio
    ]
    return parts


def _tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.input_schema,
        },
    }
