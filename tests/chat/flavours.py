"""Reasoning models, cut replies and refusals as each product sends them (tests/llm_server.py),
each driving a two-tool round and then its answer: shared by the chat-turn and run tests.

`replies()`: the scripted model's two replies (two tool calls, then the answer); each carries the
checks the product makes of the request, so a hub that drops what must come back gets the
product's 400 on the second request. `sent()`: asserts what the second request carried back. The `flavour` fixture (tests/chat/conftest.py)
runs a test once per flavour, `flavour_provider` makes it alice's default provider.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.llm_server import Reply, signature

TWO_CALLS = [("c1", "echo", {"text": "hi"}), ("c2", "add", {"a": 2, "b": 3})]
ANTHROPIC_CALLS = [("toolu_01", "echo", {"text": "hi"}), ("toolu_02", "add", {"a": 2, "b": 3})]
THOUGHT = ["The user wants ", "echo and add."]
LONG = "A long answer. " * 400  # ~6,000 characters: past 4,096 tokens of the scripted count below


@dataclass(frozen=True)
class Flavour:
    name: str
    kind: str
    model: str
    replies: Callable[[], list[Reply]]
    sent: Callable[[list[dict]], None] = lambda requests: None
    settings: dict[str, Any] = field(default_factory=dict)
    answer: str = "Echo said hi and 2+3=5"
    reasoning: str = ""  # what the user sees of the model's thinking over the turn
    finish_reason: str = ""  # of the last assistant message
    turn_status: str = "complete"
    run_replies: Callable[[], list[Reply]] | None = (
        None  # a run's script, when it differs from a turn's
    )
    run_status: str = "succeeded"
    run_answer: str | None = None  # None: `answer`
    run_error: str = ""

    def script_for_run(self) -> list[Reply]:
        return (self.run_replies or self.replies)()


def _assistant(request: dict) -> dict:
    return [m for m in request["messages"] if m["role"] == "assistant"][-1]


def _deepseek_sent(requests: list[dict]) -> None:
    assert _assistant(requests[1])["reasoning_content"] == "".join(THOUGHT)


def _gemini_sent(requests: list[dict]) -> None:
    first, second = _assistant(requests[1])["tool_calls"]
    assert first["extra_content"] == {"google": {"thought_signature": signature("c1:echo")}}
    assert "extra_content" not in second  # Gemini signs the first call of a step only


def _openrouter_sent(requests: list[dict]) -> None:
    details = _assistant(requests[1])["reasoning_details"]
    assert "".join(d.get("text", "") for d in details) == "".join(THOUGHT)
    assert [d["signature"] for d in details if "signature" in d] == [signature("".join(THOUGHT))]


def _anthropic_sent(requests: list[dict]) -> None:
    assert requests[0]["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert requests[0]["max_tokens"] == 64000  # the model's own output limit
    blocks = _assistant(requests[1])["content"]
    assert [b["type"] for b in blocks] == ["thinking", "redacted_thinking", "tool_use", "tool_use"]
    assert blocks[0] == {
        "type": "thinking",
        "thinking": "".join(THOUGHT),
        "signature": signature("".join(THOUGHT)),
    }


def _limit_sent(requests: list[dict]) -> None:
    assert requests[1]["max_tokens"] == 64000


CUT = "Echo said hi and 2+"


FLAVOURS = [
    Flavour(
        "deepseek-reasoner",
        "openai",
        "deepseek-reasoner",
        lambda: [
            Reply(reasoning=THOUGHT, tool_calls=TWO_CALLS, require=["reasoning_content"]),
            Reply(
                reasoning=["Both done."],
                text=["Echo said hi ", "and 2+3=5"],
                require=["reasoning_content"],
            ),
        ],
        _deepseek_sent,
        reasoning="The user wants echo and add.Both done.",
    ),
    Flavour(
        "gemini-3",
        "openai",
        "gemini-3-pro-preview",
        lambda: [
            Reply(tool_calls=TWO_CALLS, thought_signatures=True, require=["thought_signature"]),
            Reply(text=["Echo said hi ", "and 2+3=5"], require=["thought_signature"]),
        ],
        _gemini_sent,
    ),
    Flavour(
        "openrouter",
        "openai",
        "anthropic/claude-sonnet-4.5",
        lambda: [
            Reply(
                reasoning=THOUGHT,
                reasoning_format="openrouter",
                tool_calls=TWO_CALLS,
                require=["reasoning_details"],
            ),
            Reply(text=["Echo said hi ", "and 2+3=5"], require=["reasoning_details"]),
        ],
        _openrouter_sent,
        reasoning="The user wants echo and add.",
    ),
    Flavour(
        "anthropic-thinking",
        "anthropic",
        "claude-sonnet-4-5",
        lambda: [
            Reply(
                reasoning=THOUGHT,
                redacted_thinking=True,
                tool_calls=ANTHROPIC_CALLS,
                require=["thinking"],
            ),
            Reply(
                reasoning=["Both done."], text=["Echo said hi ", "and 2+3=5"], require=["thinking"]
            ),
        ],
        _anthropic_sent,
        settings={"thinking_budget": 2048},
        reasoning="The user wants echo and add.Both done.",
    ),
    Flavour(
        "anthropic-max-tokens",
        "anthropic",
        "claude-sonnet-4-5",
        lambda: [Reply(tool_calls=ANTHROPIC_CALLS), Reply(text=[LONG], tokens=10_000)],
        _limit_sent,
        answer=LONG,
    ),
    Flavour(
        "length-cut",
        "openai",
        "gpt-4o",
        lambda: [
            Reply(tool_calls=TWO_CALLS),
            Reply(text=["Echo said hi ", "and 2+"], finish="length"),
        ],
        answer=CUT,
        finish_reason="length",
        turn_status="incomplete",
        # A run asks the model to go on, and answers with the parts joined.
        run_replies=lambda: [
            Reply(tool_calls=TWO_CALLS),
            Reply(text=["Echo said hi ", "and 2+"], finish="length"),
            Reply(text=["3=5"]),
        ],
        run_answer="Echo said hi and 2+3=5",
    ),
    Flavour(
        "openai-refusal",
        "openai",
        "gpt-4o",
        lambda: [Reply(tool_calls=TWO_CALLS), Reply(refusal=["I can't help ", "with that."])],
        answer="I can't help with that.",
        finish_reason="refusal",
        run_status="failed",
        run_answer="",
        run_error="The model refused: I can't help with that.",
    ),
    Flavour(
        "anthropic-refusal",
        "anthropic",
        "claude-sonnet-4-5",
        lambda: [
            Reply(tool_calls=ANTHROPIC_CALLS),
            Reply(text=["I won't continue"], finish="content_filter"),
        ],
        answer="I won't continue",
        finish_reason="refusal",
        run_status="failed",
        run_answer="",
        run_error="The model refused: I won't continue",
    ),
]
