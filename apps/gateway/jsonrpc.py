"""JSON-RPC 2.0 framing: message shapes, error codes, and one exception for protocol errors."""

from __future__ import annotations

import json
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


class RawJson(str):
    """JSON text already serialized (e.g. a cached list page), spliced verbatim into a response."""


def render(message: dict[str, Any]) -> str:
    """A message's JSON text, with any RawJson values of its result spliced in unparsed."""
    result = message.get("result")
    raw = {k: v for k, v in result.items() if isinstance(v, RawJson)} if isinstance(result, dict) else {}
    if not raw:
        return dumps(message)
    placeholders = {key: f"\x00raw:{key}\x00" for key in raw}
    text = dumps({**message, "result": {**result, **placeholders}})
    for key, value in raw.items():
        text = text.replace(json.dumps(placeholders[key]), value, 1)
    return text


def dumps(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


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
