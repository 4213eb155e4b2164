"""A backend's `elicitation/create` answered by the user on the chat page: the answer's shape and
its values checked against the request's restricted schema (MCP form mode: a flat object of
strings with formats, numbers, integers, booleans, single- and multi-select enums, defaults,
required) before the backend sees them."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

from apps.core.errors import UserError

ACTIONS = ("accept", "decline", "cancel")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class ElicitationError(UserError):
    """The user's answer does not fit the request (said to the user, who answers again)."""


def parse_answer(payload: dict[str, Any]) -> tuple[str, str, dict[str, Any] | None]:
    """(request id, action, content) from a client's `elicit` message."""
    request_id, action, content = payload.get("id"), payload.get("action"), payload.get("content")
    if not isinstance(request_id, str) or not request_id:
        raise ElicitationError("'elicit' needs the request's 'id'.")
    if action not in ACTIONS:
        raise ElicitationError("'elicit' needs 'action': accept, decline or cancel.")
    if content is not None and not isinstance(content, dict):
        raise ElicitationError("'content' must be an object of the form's values.")
    return request_id, action, content if action == "accept" else None


def check_content(schema: dict[str, Any], content: dict[str, Any] | None) -> dict[str, Any]:
    """The accepted values, as the schema types them; ElicitationError naming the first problem."""
    content = content or {}
    properties = schema.get("properties") or {}
    unknown = set(content) - set(properties)
    if unknown:
        raise ElicitationError(f"The form has no field {sorted(unknown)[0]!r}.")
    values = {}
    for name, field in properties.items():
        value = content.get(name)
        if value is None or value == "":
            if name in (schema.get("required") or []):
                raise ElicitationError(f"{_label(name, field)} is required.")
            continue
        values[name] = _checked(_label(name, field), field, value)
    return values


def _label(name: str, field: dict[str, Any]) -> str:
    return str(field.get("title") or name)


def _checked(label: str, field: dict[str, Any], value: Any) -> Any:
    kind = field.get("type")
    choices = _choices(field)
    if kind == "array":
        allowed = _choices(field.get("items") or {})
        if not isinstance(value, list) or any(v not in allowed for v in value):
            raise ElicitationError(f"{label}: pick from {', '.join(allowed)}.")
        if not int(field.get("minItems") or 0) <= len(value) <= int(field.get("maxItems") or 1e9):
            raise ElicitationError(
                f"{label}: pick {field.get('minItems', 0)} to {field.get('maxItems', len(allowed))}."
            )
        return value
    if choices:
        if value not in choices:
            raise ElicitationError(f"{label}: pick one of {', '.join(choices)}.")
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise ElicitationError(f"{label} must be true or false.")
        return value
    if kind in ("number", "integer"):
        return _number(label, field, value)
    return _string(label, field, value)


def _choices(field: dict[str, Any]) -> list[str]:
    options = field.get("oneOf") or field.get("anyOf") or []
    return list(field.get("enum") or [o.get("const") for o in options if isinstance(o, dict)])


def _number(label: str, field: dict[str, Any], value: Any) -> float | int:
    try:
        number = float(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        number = None
    if number is None or (field.get("type") == "integer" and not number.is_integer()):
        raise ElicitationError(
            f"{label} must be {'a whole number' if field.get('type') == 'integer' else 'a number'}."
        )
    if "minimum" in field and number < field["minimum"]:
        raise ElicitationError(f"{label} must be at least {field['minimum']}.")
    if "maximum" in field and number > field["maximum"]:
        raise ElicitationError(f"{label} must be at most {field['maximum']}.")
    return int(number) if field.get("type") == "integer" else number


def _string(label: str, field: dict[str, Any], value: Any) -> str:
    if not isinstance(value, str):
        raise ElicitationError(f"{label} must be text.")
    if len(value) < int(field.get("minLength") or 0):
        raise ElicitationError(f"{label} needs at least {field['minLength']} characters.")
    if "maxLength" in field and len(value) > int(field["maxLength"]):
        raise ElicitationError(f"{label} takes at most {field['maxLength']} characters.")
    fmt = field.get("format")
    if fmt and not _fits(fmt, value):
        raise ElicitationError(f"{label} must be a valid {fmt}.")
    return value


def _fits(fmt: str, value: str) -> bool:
    try:
        if fmt == "date":
            date.fromisoformat(value)
        elif fmt == "date-time":
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        elif fmt == "email":
            return bool(_EMAIL.match(value))
        elif fmt == "uri":
            return bool(re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:\S+$", value))
    except ValueError:
        return False
    return True
