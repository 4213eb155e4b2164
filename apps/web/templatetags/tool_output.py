"""Tool calls as the pages show them: run steps rendered by the server (live cards: render.js)."""

from __future__ import annotations

import json
import sys
from typing import Any

from django import template

from apps.chat import tools

register = template.Library()


@register.filter
def as_json(value: Any) -> str:
    """Arguments as the model sent them: indented JSON, not a Python repr."""
    return json.dumps(value, indent=2, ensure_ascii=False)


@register.filter
def result_text(result: dict[str, Any] | None) -> str:
    """A tool result as the model was told it (images and other binary content by their type), whole."""
    return tools.result_text(result or {}, sys.maxsize)


@register.filter
def rich_result(result: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a result's text does not show (images, audio, resources, links, structured content),
    for render.js to draw on the run's page; None when there is nothing more."""
    result = result or {}
    content = [
        item
        for item in result.get("content") or []
        if isinstance(item, dict) and item.get("type") != "text"
    ]
    if not content and result.get("structuredContent") is None:
        return None
    return {"content": content, "structuredContent": result.get("structuredContent")}
