"""Anthropic's Messages API on the official `anthropic` SDK."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anthropic

from apps.llm.adapters import register
from apps.llm.adapters.assembly import PartialCall
from apps.llm.adapters.base import NO_KEY, Adapter, Tuning, sdk_http_client
from apps.llm.adapters.retrying import Attempts
from apps.llm.media import ANTHROPIC_IMAGE_TYPES
from apps.llm.types import Event, Finish, Message, ReasoningDelta, TextDelta, ToolSpec, Usage

# The Messages API requires max_tokens. A reply is allowed the model's own output limit (unless the
# provider sets one): what the API's model list says, else these known limits (longest prefix
# first), else DEFAULT_MAX_TOKENS; a model that allows less says so in its 400, and gets that.
OUTPUT_LIMITS = (
    ("claude-3-5-", 8192),
    ("claude-3-", 4096),
    ("claude-opus-4-0", 32000),
    ("claude-opus-4-1", 32000),
    ("claude-opus-4-2", 32000),
    ("claude-opus-4", 64000),
    ("claude-", 64000),
)
DEFAULT_MAX_TOKENS = 32000
_MAX_TOKENS_REFUSED = re.compile(r"max_tokens: \d+ > (\d+)")
_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
}
# Reasoning blocks the API wants back unchanged (signature included) in a tool-use turn.
_THINKING = ("thinking", "redacted_thinking")


@register
class AnthropicAdapter(Adapter):
    kind = "anthropic"

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
        # The SDK adds /v1/... itself; people paste "https://api.anthropic.com/v1" as often as not.
        root = base_url.rstrip("/").removesuffix("/v1")
        # max_retries=0: the one retry is ours (retrying.py).
        timeouts = anthropic.Timeout(timeout, connect=min(timeout, 10.0))
        self._client = anthropic.AsyncAnthropic(
            base_url=root,
            api_key=self.api_key or NO_KEY,
            max_retries=0,
            timeout=timeouts,
            http_client=sdk_http_client(anthropic, timeouts, public_only=public_only),
        )
        self._attempts = Attempts(sdk=anthropic, base_url=base_url, timeout=timeout)
        self._limits: dict[str, int] = {}  # model -> its output limit, once learnt

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
        system = "\n\n".join(m.text for m in messages if m.role == "system" and m.text)
        request: dict[str, Any] = {
            "model": model,
            "messages": _conversation(messages),
            "stream": True,
        }
        if system:
            request["system"] = system
        if tools:
            request["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in tools
            ]
        if self.tuning.thinking_budget:
            request["thinking"] = {"type": "enabled", "budget_tokens": self.tuning.thinking_budget}
        if temperature is not None:
            request["temperature"] = temperature
        if stop:
            request["stop_sequences"] = list(stop)
        limit = max_tokens or self.tuning.max_output_tokens
        return self._attempts.stream(
            lambda: self._events(request, limit), model=model, patience=patience
        )

    async def _output_limit(self, model: str) -> int:
        """The model's own output limit: the model list's `max_tokens`, else the known ones."""
        if model not in self._limits:
            try:
                listed = (await self._client.models.retrieve(model)).max_tokens
            except Exception:  # noqa: BLE001 - a proxy or an older API without it: the table decides
                listed = None
            known = next(
                (limit for prefix, limit in OUTPUT_LIMITS if model.startswith(prefix)),
                DEFAULT_MAX_TOKENS,
            )
            self._limits[model] = listed if isinstance(listed, int) and listed > 0 else known
        return self._limits[model]

    async def _open(self, request: dict[str, Any], limit: int | None) -> Any:
        model = request["model"]
        request = {**request, "max_tokens": limit or await self._output_limit(model)}
        try:
            return await self._client.messages.create(**request)
        except anthropic.BadRequestError as exc:
            allowed = _MAX_TOKENS_REFUSED.search(str(exc))
            if limit or not allowed:
                raise
            # The model allows less than we thought: ask with its limit, from now on.
            self._limits[model] = int(allowed.group(1))
            return await self._client.messages.create(
                **{**request, "max_tokens": self._limits[model]}
            )

    async def _events(self, request: dict[str, Any], limit: int | None) -> AsyncIterator[Event]:
        stream = await self._open(request, limit)
        calls: dict[int, PartialCall] = {}
        thinking: dict[int, dict[str, Any]] = {}
        input_tokens = output_tokens = 0
        reason: str | None = None
        try:
            async for event in stream:
                if event.type == "message_start":
                    input_tokens = event.message.usage.input_tokens or 0
                    output_tokens = event.message.usage.output_tokens or 0
                elif event.type == "content_block_start" and event.content_block.type == "tool_use":
                    block = event.content_block
                    calls[event.index] = PartialCall(
                        id=block.id, name=block.name, given=block.input or None
                    )
                elif event.type == "content_block_start" and event.content_block.type in _THINKING:
                    thinking[event.index] = event.content_block.to_dict()
                elif event.type == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta" and delta.text:
                        yield TextDelta(delta.text)
                    elif delta.type == "input_json_delta" and event.index in calls:
                        calls[event.index].fragments.append(delta.partial_json)
                    elif delta.type == "thinking_delta" and event.index in thinking:
                        thinking[event.index]["thinking"] = (
                            thinking[event.index].get("thinking", "") + delta.thinking
                        )
                        yield ReasoningDelta(delta.thinking)
                    elif delta.type == "signature_delta" and event.index in thinking:
                        thinking[event.index]["signature"] = (
                            thinking[event.index].get("signature", "") + delta.signature
                        )
                elif event.type == "content_block_stop" and event.index in calls:
                    yield calls.pop(event.index).finish(fallback_id=f"toolu_{event.index}")
                elif event.type == "message_delta":
                    reason = event.delta.stop_reason or reason
                    output_tokens = event.usage.output_tokens or output_tokens
                    input_tokens = getattr(event.usage, "input_tokens", None) or input_tokens
        finally:
            await stream.close()
        for index in sorted(calls):  # blocks the stream never closed
            yield calls[index].finish(fallback_id=f"toolu_{index}")
        yield Usage(input_tokens, output_tokens)
        replay = {"thinking": [thinking[i] for i in sorted(thinking)]} if thinking else None
        yield Finish(_REASONS.get(reason or "end_turn", reason or "stop"), replay=replay)

    async def list_models(self, *, retry: bool = True) -> list[str]:
        async def fetch() -> list[str]:
            return sorted([model.id async for model in self._client.models.list()])

        return await self._attempts.call(fetch, retry=retry)

    async def aclose(self) -> None:
        await self._client.close()


def _conversation(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Messages API turns: system lifted out, tool results as user turns, same-role turns merged."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            # Every tool result of a round must sit in the one user turn after the calls.
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.text,
                "is_error": message.is_error,
            }
        ]
    # Thinking blocks first and unchanged: the API checks their signatures in a tool-use turn.
    blocks: list[dict[str, Any]] = list((message.replay or {}).get("thinking") or ())
    if message.text:  # the API refuses empty text blocks
        blocks.append({"type": "text", "text": message.text})
    blocks += [
        {"type": "image", "source": {"type": "base64", "media_type": i.mime_type, "data": i.data}}
        for i in message.images
        if i.mime_type in ANTHROPIC_IMAGE_TYPES
    ]
    blocks += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
        for c in message.tool_calls
    ]
    return blocks
