"""Tool-call arguments arrive as JSON fragments; these helpers make whole calls of them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from apps.llm.types import ToolCall


@dataclass
class PartialCall:
    id: str = ""
    name: str = ""
    fragments: list[str] = field(default_factory=list)
    given: dict | None = None  # a whole input some servers send at once instead of fragments

    @property
    def empty(self) -> bool:
        """Nothing but metadata arrived for it (no name, no arguments)."""
        return not (self.name or self.fragments or self.given)

    def add(self, arguments: Any) -> None:
        """One piece of arguments as the server sent it: a JSON text fragment, as OpenAI documents,
        or the whole object (Hugging Face TGI; a llama-server release), streamed or not."""
        if isinstance(arguments, str):
            self.fragments.append(arguments)
        elif isinstance(arguments, dict):
            self.given = {**(self.given or {}), **arguments}
        elif arguments is not None:  # a list or number: parse_arguments says it is not an object
            self.fragments.append(json.dumps(arguments))

    def finish(self, fallback_id: str) -> ToolCall:
        arguments, error = parse_arguments("".join(self.fragments), given=self.given)
        return ToolCall(
            id=self.id or fallback_id, name=self.name, arguments=arguments, arguments_error=error
        )


def parse_arguments(raw: str, *, given: dict | None = None) -> tuple[dict, str | None]:
    """The model's arguments as a dict, or ({}, why not) — the orchestrator tells the model."""
    if not raw.strip():
        return (dict(given) if isinstance(given, dict) else {}), None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return (
            {},
            f"The tool arguments are not valid JSON ({exc.msg} at character {exc.pos}): {raw[:200]}",
        )
    if not isinstance(value, dict):
        return (
            {},
            f"The tool arguments must be a JSON object, not {type(value).__name__}: {raw[:200]}",
        )
    return value, None
