"""Anthropic's Messages API on the official `anthropic` SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import anthropic

from apps.llm.adapters import register
from apps.llm.adapters.assembly import PartialCall
from apps.llm.adapters.base import NO_KEY, Adapter, sdk_http_client
from apps.llm.adapters.retrying import Attempts
from apps.llm.types import Event, Finish, Message, TextDelta, ToolSpec, Usage

# The Messages API requires max_tokens; this is what a turn gets when the caller does not say.
DEFAULT_MAX_TOKENS = 4096
_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
            "refusal": "content_filter"}


@register
class AnthropicAdapter(Adapter):
    kind = "anthropic"

    def __init__(self, *, base_url: str, api_key: str | None, timeout: float = 120.0, public_only: bool = False) -> None:
        super().__init__(base_url=base_url, api_key=api_key, timeout=timeout, public_only=public_only)
        # The SDK adds /v1/... itself; people paste "https://api.anthropic.com/v1" as often as not.
        root = base_url.rstrip("/").removesuffix("/v1")
        # max_retries=0: the one retry is ours (retrying.py).
        timeouts = anthropic.Timeout(timeout, connect=min(timeout, 10.0))
        self._client = anthropic.AsyncAnthropic(
            base_url=root, api_key=self.api_key or NO_KEY, max_retries=0, timeout=timeouts,
            http_client=sdk_http_client(anthropic, timeouts, public_only=public_only),
        )
        self._attempts = Attempts(sdk=anthropic, base_url=base_url, timeout=timeout)

    def stream(
        self, *, model: str, messages: Sequence[Message], tools: Sequence[ToolSpec], max_tokens: int | None = None
    ) -> AsyncIterator[Event]:
        system = "\n\n".join(m.text for m in messages if m.role == "system" and m.text)
        request: dict[str, Any] = {
            "model": model,
            "max_tokens": max_tokens or DEFAULT_MAX_TOKENS,
            "messages": _conversation(messages),
            "stream": True,
        }
        if system:
            request["system"] = system
        if tools:
            request["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
                                for t in tools]
        return self._attempts.stream(lambda: self._events(request), model=model)

    async def _events(self, request: dict[str, Any]) -> AsyncIterator[Event]:
        stream = await self._client.messages.create(**request)
        calls: dict[int, PartialCall] = {}
        input_tokens = output_tokens = 0
        reason: str | None = None
        try:
            async for event in stream:
                if event.type == "message_start":
                    input_tokens = event.message.usage.input_tokens or 0
                    output_tokens = event.message.usage.output_tokens or 0
                elif event.type == "content_block_start" and event.content_block.type == "tool_use":
                    block = event.content_block
                    calls[event.index] = PartialCall(id=block.id, name=block.name, given=block.input or None)
                elif event.type == "content_block_delta":
                    if event.delta.type == "text_delta" and event.delta.text:
                        yield TextDelta(event.delta.text)
                    elif event.delta.type == "input_json_delta" and event.index in calls:
                        calls[event.index].fragments.append(event.delta.partial_json)
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
        yield Finish(_REASONS.get(reason or "end_turn", reason or "stop"))

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
        return [{"type": "tool_result", "tool_use_id": message.tool_call_id or "", "content": message.text,
                 "is_error": message.is_error}]
    # The API refuses empty text blocks.
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in message.tool_calls]
    return blocks
