"""JSON-RPC 2.0 framing: message shapes, error codes, and one exception for protocol errors."""

from __future__ import annotations

import json
import re
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SESSION_NOT_FOUND = -32001
RESOURCE_NOT_FOUND = -32002


class RpcError(Exception):
    """A JSON-RPC error answer; raised anywhere in request handling, rendered by the transport."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


# Deeper than any real MCP message; deep nesting otherwise costs recursion in every layer below.
MAX_DEPTH = 100
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def loads(body: bytes) -> Any:
    """A client's JSON message, or RpcError(PARSE_ERROR) for anything that is not strict UTF-8
    JSON of bounded depth whose strings are real Unicode (no lone UTF-16 surrogates, which no
    backend, database or UTF-8 reply could carry)."""
    try:
        text = body.decode("utf-8")
        message = json.loads(text)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise RpcError(PARSE_ERROR, "Parse error: body is not valid UTF-8 JSON") from None
    # Both walks are skipped unless the text could fail them (str.count and re.search run in C).
    if text.count("[") + text.count("{") > MAX_DEPTH and _depth_exceeds(message, MAX_DEPTH):
        raise RpcError(PARSE_ERROR, f"Parse error: JSON nested deeper than {MAX_DEPTH} levels")
    if _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(message):
        raise RpcError(
            PARSE_ERROR, "Parse error: a string holds a lone UTF-16 surrogate (not valid Unicode)"
        )
    return message


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [*value.keys(), *value.values()]
    return value if isinstance(value, list) else []


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend(
            (child, depth + 1) for child in _children(item) if isinstance(child, (dict, list))
        )
    return False


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        else:
            stack.extend(_children(item))
    return False


class RawJson(str):
    """JSON text already serialized (e.g. a cached list page), spliced verbatim into a response."""


def render(message: dict[str, Any]) -> str:
    """A message's JSON text, with any RawJson values of its result spliced in unparsed."""
    result = message.get("result")
    raw = (
        {k: v for k, v in result.items() if isinstance(v, RawJson)}
        if isinstance(result, dict)
        else {}
    )
    if not raw:
        return dumps(message)
    placeholders = {key: f"\x00raw:{key}\x00" for key in raw}
    text = dumps({**message, "result": {**result, **placeholders}})
    for key, value in raw.items():
        text = text.replace(json.dumps(placeholders[key]), value, 1)
    return text


def dumps(message: dict[str, Any]) -> str:
    text = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # A backend's answer may carry a lone surrogate: escaped (\ud800), it is still valid JSON.
            text = json.dumps(message, separators=(",", ":"), ensure_ascii=True)
    return text


def result(request_id: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def error(request_id: Any, exc: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": exc.to_dict()}


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def kind(message: Any) -> str:
    """'request', 'notification' or 'response'; RpcError(-32600) for anything else."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, "Invalid Request: expected a JSON-RPC 2.0 object")
    has_id = "id" in message
    if has_id and not _valid_id(message["id"]):
        raise RpcError(INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
    if "method" in message:
        if not isinstance(message["method"], str) or not message["method"]:
            raise RpcError(INVALID_REQUEST, "Invalid Request: method must be a non-empty string")
        if "params" in message and not isinstance(message["params"], dict):
            raise RpcError(INVALID_REQUEST, "Invalid Request: params must be an object")
        return "request" if has_id else "notification"
    if has_id and (("result" in message) != ("error" in message)):
        return "response"
    raise RpcError(INVALID_REQUEST, "Invalid Request: not a request, notification or response")


def _valid_id(value: Any) -> bool:
    return (isinstance(value, str) or isinstance(value, int)) and not isinstance(value, bool)
