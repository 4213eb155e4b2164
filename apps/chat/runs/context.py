"""The conversation a run's model is sent each round, rebuilt from the task and completed steps,
kept under MCPHUB_RUN_CONTEXT_CHARS: the task and the latest rounds whole, older tool results cut
to a short head, and, if that is still too much, the oldest rounds left out with a note saying so."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from apps.chat.rounds import stored_message
from apps.chat.tools import result_text
from apps.llm.types import Message

SYSTEM = (
    "You work autonomously on the user's task with the tools you are given, round after round. "
    "Call tools as needed; when the task is done, reply with the final answer and call no tool."
)
OLD_RESULT_CHARS = 200
# What the model is told after an answer cut at its output limit (a continuation round).
CONTINUE = "Your reply was cut off at the output limit. Continue exactly where it stopped, without repeating anything."


@dataclass(frozen=True)
class Context:
    messages: list[Message]
    chars: int
    omitted_rounds: int


def _round_messages(step: dict[str, Any], result_chars: int) -> list[Message]:
    calls = step.get("tool_calls") or []
    assistant = stored_message(
        text=step.get("text", ""),
        calls=calls,
        reasoning=step.get("reasoning") or "",
        replay=step.get("replay"),
    )
    results = [
        Message(
            role="tool",
            text=result_text(c.get("result") or {}, result_chars),
            tool_call_id=c["id"],
            is_error=bool(c.get("isError")),
        )
        for c in calls
    ]
    if not calls and step.get("finish_reason") == "length":
        results.append(Message(role="user", text=CONTINUE))
    return [assistant, *results]


def size(messages: Sequence[Message]) -> int:
    total = 0
    for message in messages:
        total += len(message.text)
        for call in message.tool_calls:
            total += len(call.name) + len(json.dumps(call.arguments))
    return total


def build(
    task: str, steps: Sequence[dict[str, Any]], *, limit: int, keep_rounds: int, result_chars: int
) -> Context:
    """Messages for the next round; `steps` are the completed rounds, oldest first."""
    recent = len(steps) - keep_rounds
    rounds = [
        _round_messages(step, result_chars if i >= recent else OLD_RESULT_CHARS)
        for i, step in enumerate(steps)
    ]
    omitted = 0
    head = [Message(role="system", text=SYSTEM), Message(role="user", text=task)]
    total = size(head) + sum(size(r) for r in rounds)
    # Whole rounds go, oldest first: a tool call and its result stay together, as providers require.
    while total > limit and len(rounds) - omitted > 1:
        total -= size(rounds[omitted])
        omitted += 1
    if omitted:
        note = f"\n\n[Rounds 1–{omitted} are left out to keep the context bounded; their work is done.]"
        head[1] = Message(role="user", text=task + note)
        total += len(note)
    messages = head + [m for r in rounds[omitted:] for m in r]
    return Context(messages, total, omitted)
