"""Tool-call arguments arrive as JSON fragments; these helpers make whole calls of them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from apps.llm.types import ToolCall


@dataclass
class PartialCall:
    id: str = ""
    name: str = ""
    fragments: list[str] = field(default_factory=list)
    given: dict | None = None  # a whole input some servers send at once instead of fragments

    def finish(self, fallback_id: str) -> ToolCall:
        arguments, error = parse_arguments("".join(self.fragments), given=self.given)
        return ToolCall(id=self.id or fallback_id, name=self.name, arguments=arguments, arguments_error=error)


def parse_arguments(raw: str, *, given: dict | None = None) -> tuple[dict, str | None]:
    """The model's arguments as a dict, or ({}, why not) — the orchestrator tells the model."""
    if not raw.strip():
        return (dict(given) if isinstance(given, dict) else {}), None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return {}, f"The tool arguments are not valid JSON ({exc.msg} at character {exc.pos}): {raw[:200]}"
    if not isinstance(value, dict):
        return {}, f"The tool arguments must be a JSON object, not {type(value).__name__}: {raw[:200]}"
    return value, None
