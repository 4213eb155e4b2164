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
