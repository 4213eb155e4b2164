"""Tool calls as the pages show them (run steps rendered by the server; the chat page's live cards
do the same in static/js: chat.js and render.js's resultText)."""

from __future__ import annotations

import json
from typing import Any

from django import template

register = template.Library()


@register.filter
def as_json(value: Any) -> str:
    """Arguments as the model sent them: indented JSON, not a Python repr."""
    return json.dumps(value, indent=2, ensure_ascii=False)


@register.filter
def result_text(result: dict[str, Any] | None) -> str:
    """A tool result as people read it: its text items, anything else as JSON."""
    items = (result or {}).get("content") or []
    return "\n".join(
        str(item.get("text", "")) if isinstance(item, dict) and item.get("type") == "text" else json.dumps(item)
        for item in items
    )
