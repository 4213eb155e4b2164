"""One round's moving parts, shared by chat turns (orchestrator.py) and autonomous runs (runs/):
stream the model's reply, and run one tool call through the tool box with its approval gate."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from apps.chat.tools import Toolbox, error_result
from apps.llm.types import Message, ProviderStatus, TextDelta, ToolCall, Usage

# Asked, with the reason (Endpoint.approval_reason), before a call that needs approval; True lets it run.
Approve = Callable[[ToolCall, str], Awaitable[bool]]


@dataclass(frozen=True)
class ModelReply:
    text: str
    calls: list[ToolCall]
    usage: Usage
    duration_ms: float


async def model_round(
    adapter: Any, *, model: str, history: Sequence[Message], toolbox: Toolbox, on_text: Callable[[str], None] | None = None,
    on_status: Callable[[str], Awaitable[None]] | None = None,
) -> ModelReply:
    """The model's whole reply to `history`; text chunks go to `on_text` as they arrive, and what the
    provider is doing before it answers ("the model is loading") to `on_status`, then "" once it does."""
    chunks: list[str] = []
    calls: list[ToolCall] = []
    usage = Usage(0, 0)
    clock = time.perf_counter()
    waiting = False
    async for event in adapter.stream(model=model, messages=history, tools=toolbox.specs):
        if isinstance(event, ProviderStatus):
            waiting = on_status is not None
            if waiting:
                await on_status(event.message)
            continue
        if waiting:
            waiting = False
            await on_status("")
        if isinstance(event, TextDelta):
            chunks.append(event.text)
            if on_text is not None:
                on_text(event.text)
        elif isinstance(event, ToolCall):
            calls.append(event)
        elif isinstance(event, Usage):
            usage = event
    return ModelReply("".join(chunks), calls, usage, (time.perf_counter() - clock) * 1000)


async def call_tool(
    toolbox: Toolbox, call: ToolCall, *, approval_reason: Callable[[object], str | None], approve: Approve,
    on_running: Callable[[], None] | None = None,
) -> tuple[dict[str, Any], float]:
    """The call's result (`isError` on any failure) and how long the tool took, not counting the
    wait for approval; raises only CancelledError."""
    if call.arguments_error:
        return error_result(f"Invalid arguments for {call.name}: {call.arguments_error}"), 0.0
    exposed = toolbox.find(call.name)
    if exposed is None:
        return toolbox.unknown(call.name), 0.0
    reason = approval_reason(exposed.entry.get("annotations"))
    if reason is not None and not await approve(call, reason):
        return error_result(f"The user denied the call to {call.name}."), 0.0
    if on_running is not None:
        on_running()
    clock = time.perf_counter()
    result = await toolbox.call(exposed, call)
    return result, (time.perf_counter() - clock) * 1000
