"""One round's moving parts, shared by chat turns (orchestrator.py) and autonomous runs (runs/):
stream the model's reply, and run one tool call through the tool box with its approval gate."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from apps.chat.tools import CallWatch, Toolbox
from apps.llm.types import (
    Finish,
    Message,
    ProviderStatus,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    Usage,
)
from apps.toolsets.calls import error_result

# Asked, with the reason (Endpoint.approval_reason), before a call that needs approval; True lets it run.
Approve = Callable[[ToolCall, str], Awaitable[bool]]


@dataclass(frozen=True)
class ModelReply:
    text: str
    calls: list[ToolCall]
    usage: Usage
    duration_ms: float
    reasoning: str = ""
    finish: Finish = field(default_factory=lambda: Finish("stop"))

    @property
    def finish_reason(self) -> str:
        """How the reply ended, when the user must know: "length", "refusal" or "" (it just ended)."""
        if self.finish.reason == "length":
            return "length"
        return (
            "refusal"
            if self.finish.reason in ("refusal", "content_filter") and not self.calls
            else ""
        )

    @property
    def shown_text(self) -> str:
        """The answer as shown and kept: a refusal's message when the model refused instead of answering."""
        return self.text or self.finish.refusal

    def message(self) -> Message:
        """The reply as the next round's history holds it."""
        return Message(
            role="assistant",
            text=self.shown_text,
            tool_calls=tuple(self.calls),
            reasoning=self.reasoning,
            replay=self.finish.replay,
        )

    def replay(self) -> dict[str, Any] | None:
        """What of the reply must go back to the provider, as stored with it (never shown)."""
        calls = {c.id: c.replay for c in self.calls if c.replay}
        if not calls and not self.finish.replay:
            return None
        return {"message": self.finish.replay or {}, "calls": calls}


def stored_message(
    *, text: str, calls: Sequence[dict[str, Any]], reasoning: str, replay: dict[str, Any] | None
) -> Message:
    """A stored reply (chat message or run step) as the model is sent it: `calls` as stored, and
    `replay` as ModelReply.replay() made it."""
    replay = replay or {}
    extras = replay.get("calls") or {}
    tool_calls = tuple(
        ToolCall(
            id=c["id"],
            name=c["name"],
            arguments=c.get("arguments") or {},
            replay=extras.get(c["id"]),
        )
        for c in calls
    )
    return Message(
        role="assistant",
        text=text,
        tool_calls=tool_calls,
        reasoning=reasoning,
        replay=replay.get("message") or None,
    )


async def model_round(
    adapter: Any,
    *,
    model: str,
    history: Sequence[Message],
    toolbox: Toolbox,
    on_text: Callable[[str], None] | None = None,
    on_reasoning: Callable[[str], None] | None = None,
    on_status: Callable[[str], Awaitable[None]] | None = None,
    patience: float = 0.0,
) -> ModelReply:
    """The model's whole reply to `history`; text and reasoning chunks go to `on_text` and
    `on_reasoning` as they arrive, and what the provider is doing before it answers ("the model is
    loading", "waiting for the model provider") to `on_status`, then "" once it does. A provider
    outage is waited out for up to `patience` seconds before LLMError says what failed."""
    chunks: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    usage = Usage(0, 0)
    finish = Finish("stop")
    clock = time.perf_counter()
    waiting = False
    async for event in adapter.stream(
        model=model, messages=history, tools=toolbox.specs, patience=patience
    ):
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
        elif isinstance(event, ReasoningDelta):
            thoughts.append(event.text)
            if on_reasoning is not None:
                on_reasoning(event.text)
        elif isinstance(event, ToolCall):
            calls.append(event)
        elif isinstance(event, Usage):
            usage = event
        elif isinstance(event, Finish):
            finish = event
    return ModelReply(
        "".join(chunks),
        calls,
        usage,
        (time.perf_counter() - clock) * 1000,
        "".join(thoughts),
        finish,
    )


async def call_tool(
    toolbox: Toolbox,
    call: ToolCall,
    *,
    approval_reason: Callable[[object], str | None],
    approve: Approve,
    on_running: Callable[[], None] | None = None,
    watch: CallWatch | None = None,
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
    result = await toolbox.call(exposed, call, watch=watch)
    return result, (time.perf_counter() - clock) * 1000
