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
from apps.llm.adapters.retrying import Attempts
from apps.llm.types import Event, Finish, Message, ReasoningDelta, TextDelta, ToolCall, ToolSpec, Usage

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

    def __init__(self, *, base_url: str, api_key: str | None, timeout: float = 120.0, tuning: Tuning | None = None) -> None:
        super().__init__(base_url=base_url, api_key=api_key, timeout=timeout, tuning=tuning)
        # max_retries=0: the one retry is ours (retrying.py), so its behaviour is tested, not the SDK's.
        timeouts = openai.Timeout(timeout, connect=min(timeout, 10.0))
        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=self.api_key or NO_KEY, max_retries=0, timeout=timeouts,
            http_client=sdk_http_client(openai, timeouts),
        )
        self._attempts = Attempts(sdk=openai, base_url=base_url, timeout=timeout)
        # Models whose server refused `max_tokens` once: asked with `max_completion_tokens` from then on.
        self._completion_tokens: set[str] = set()

    def stream(
        self, *, model: str, messages: Sequence[Message], tools: Sequence[ToolSpec], max_tokens: int | None = None
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
        return self._attempts.stream(lambda: self._events(request), model=model)

    def _token_limit_key(self, model: str) -> str:
        name = model.rsplit("/", 1)[-1]  # "openai/o3-mini" through a router
        return "max_completion_tokens" if _REASONING_MODEL.match(name) or model in self._completion_tokens else "max_tokens"

    async def _events(self, request: dict[str, Any]) -> AsyncIterator[Event]:
        try:
            stream = await self._post(request)
        except openai.BadRequestError as exc:
            if "max_tokens" not in request or "max_completion_tokens" not in str(exc):
                raise
            # A reasoning model the name did not give away: say it the way its server asks, once.
            self._completion_tokens.add(request["model"])
            request = {**request, "max_completion_tokens": request["max_tokens"]}
            del request["max_tokens"]
            stream = await self._post(request)
        calls: dict[int, PartialCall] = {}
        kept = Kept()
        usage: Usage | None = None
        reason: str | None = None
        try:
            async for chunk in stream:
                if chunk.get("usage"):
                    usage = Usage(chunk["usage"].get("prompt_tokens") or 0, chunk["usage"].get("completion_tokens") or 0)
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
        for position, index in enumerate(sorted(calls)):
            yield kept.with_call_fields(calls[index].finish(fallback_id=f"call_{position}"))
        if usage is not None:
            yield usage
        # Some servers (older Ollama) say "stop" after calling tools; the calls are what matter.
        reason = "tool_calls" if calls and reason in (None, "stop") else reason or "stop"
        yield Finish("refusal" if kept.refusal and reason == "stop" else reason, refusal=kept.refusal, replay=kept.replay())

    async def _post(self, request: dict[str, Any]) -> openai.AsyncStream[dict[str, Any]]:
        # The SDK's own request path and stream, without `chat.completions.create()`: it walks every
        # message through a type-driven transform (~0.2 ms each, 20 ms per request at 100 messages,
        # all of it CPU on the loop) that changes nothing in the wire-format dicts built here. Chunks
        # come as the SDK's parsed JSON (`object`: its documented raw-data cast) rather than
        # ChatCompletionChunk models, whose construction was a third of a round's CPU in the SDK.
        return await self._client.post(
            "/chat/completions", body=request, cast_to=ChatCompletion, stream=True,
            stream_cls=openai.AsyncStream[object], options={"security": {"bearer_auth": True}},
        )

    async def list_models(self, *, retry: bool = True) -> list[str]:
        async def fetch() -> list[str]:
            return sorted([model.id async for model in self._client.models.list()])

        return await self._attempts.call(fetch, retry=retry)

    async def aclose(self) -> None:
        await self._client.close()


def _add_fragment(calls: dict[int, PartialCall], delta: dict[str, Any]) -> None:
    index = delta.get("index")
    call = calls.setdefault(index if isinstance(index, int) else len(calls), PartialCall())
    call.id = call.id or (delta.get("id") or "")
    function = delta.get("function")
    if function:
        call.name = call.name or (function.get("name") or "")
        if function.get("arguments"):
            call.fragments.append(function["arguments"])


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
            both_text = isinstance(value, str) and isinstance(kept.get(key), str) and key in ("text", "summary", "data")
            kept[key] = kept[key] + value if both_text else value
        return str(detail.get("text") or detail.get("summary") or "") if detail.get("type") != "reasoning.encrypted" else ""

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
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
             **(c.replay or {})}
            for c in message.tool_calls
        ],
        **replay,
    }


def _tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.input_schema},
    }
