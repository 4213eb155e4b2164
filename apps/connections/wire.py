"""The Redis wire format shared by `RemotePool` (web) and `PoolWorker` (worker).

Compact JSON. Each pool operation has one row in `OPS`: how the worker invokes it on its
`Pool` from wire arguments, and how its result is dumped and loaded again. Errors keep
their kind: an `MCPError` keeps its JSON-RPC code; pool errors keep their class.

Messages, web → worker inbox (a Redis list, RPUSH / BLMPOP):
  {"t": "call", "id", "r": reply channel, "op", "s": spec ref, "SE": encrypted full spec
   (or "S": the full spec in clear when no codec is configured), "a": args, "to": timeout,
   "prog": bool, "rel": [relayed kinds: sampling/createMessage, elicitation/create,
   roots/list, log, notifications/elicitation/complete]}
  {"t": "cancel", "id"}                       the caller gave up: cancel the call
  {"t": "sres", "id", "rid", "ok" | "err"}    answer to a server→client request
worker → web (PUBLISH on the caller's reply channel):
  {"t": "res", "id", "ok" | "err"}   {"t": "prog", "id", "k": seq, "p": [progress, total, message]}
  {"t": "log", "id", "p": notifications/message params}   (before the call's "res")
  {"t": "log", "id", "m": "notifications/elicitation/complete", "p": its params}   (the same way)
  {"t": "sreq", "id", "rid", "m": method, "p": params}
worker → web, on a direct link only (link.py): {"t": "bye"}, its last message: the worker stops
  and runs nothing more sent on that link
Work handed over on a direct link only (`RemotePool.hand_off`: a chat turn or a run to start):
  web → worker {"t": "work", "id", "k": kind, "w": the work's id}
  worker → web {"t": "took", "id", "ok": bool}   false: it runs no such work now (send it by Celery)
A call_tool result travels as the backend's JSON (`Pool.call_tool(raw=True)`); the web
side builds the model only for callers that did not ask for raw.
worker → everyone (PUBLISH on the events channel): {"s": server, "n": notification}
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from apps.connections.errors import ERROR_KINDS, PoolError
from apps.connections.listing import Discovery
from apps.connections.specs import ServerSpec

SPEC_UNKNOWN = "spec_unknown"  # the worker has no spec for this (name, hash): resend it in full
HANDBACK = "handback"  # the worker is stopping and did not run the call: send it to another worker


def handback(message: str) -> dict[str, Any]:
    """The error of a call its worker did not run (it is stopping): the caller sends it elsewhere."""
    return {"kind": HANDBACK, "server": "", "message": message}


def dumps(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"))


def dump_model(model: Any) -> Any:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def encode_error(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, MCPError):
        return {
            "kind": "mcp",
            "code": exc.code,
            "message": exc.error.message,
            "data": exc.error.data,
        }
    if isinstance(exc, PoolError):
        return {"kind": exc.kind, "server": exc.server, "message": exc.message}
    return {"kind": "internal", "server": "", "message": f"{type(exc).__name__}: {exc}"}


def decode_error(err: dict[str, Any]) -> Exception:
    if err["kind"] == "mcp":
        return MCPError(code=err["code"], message=err["message"], data=err.get("data"))
    cls = ERROR_KINDS.get(err["kind"], PoolError)
    return cls(err.get("server", ""), err["message"])


def spec_ref(spec: ServerSpec) -> list[str]:
    return [spec.name, spec.config_hash]


_ref_adapter: TypeAdapter[types.ResourceTemplateReference | types.PromptReference] = TypeAdapter(
    types.ResourceTemplateReference | types.PromptReference
)
_notification_adapter = types.server_notification_adapter


def load_notification(data: Any) -> types.ServerNotification:
    return _notification_adapter.validate_python(data)


_elicit_adapter: TypeAdapter[types.ElicitRequestParams] = TypeAdapter(types.ElicitRequestParams)


def load_server_request_params(method: str, params: Any) -> Any:
    """Rebuild the typed params a `Relay` handler expects (roots/list has none)."""
    if method == "sampling/createMessage":
        return types.CreateMessageRequestParams.model_validate(params)
    if method == "elicitation/create":
        return _elicit_adapter.validate_python(params)
    return None


def dump_any(value: Any) -> Any:
    return dump_model(value) if hasattr(value, "model_dump") else value


@dataclass(frozen=True)
class Op:
    """One pool operation: invoke on a Pool from wire args, and (de)serialize its result."""

    invoke: Callable[..., Awaitable[Any]]
    dump: Callable[[Any], Any]
    load: Callable[[Any], Any]


def _models(model: type[Any]) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    return (lambda items: [dump_model(i) for i in items]), (
        lambda data: [model.model_validate(i) for i in data]
    )


def _model(model: type[Any]) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    return dump_model, model.model_validate


def _plain() -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    return (lambda value: value), (lambda value: value)


def _op(
    invoke: Callable[..., Awaitable[Any]], codec: tuple[Callable[[Any], Any], Callable[[Any], Any]]
) -> Op:
    return Op(invoke, *codec)


# invoke(pool, spec, args, *, timeout, progress, relay): the worker's side of every RemotePool method.
OPS: dict[str, Op] = {
    "call_tool": _op(
        lambda pool, spec, a, timeout, progress, relay: pool.call_tool(
            spec,
            a["name"],
            a.get("arguments"),
            timeout=timeout,
            progress_callback=progress,
            relay=relay,
            meta=a.get("meta"),
            raw=True,
        ),
        ((lambda value: value), types.CallToolResult.model_validate),
    ),
    "list_tools": _op(
        lambda pool, spec, a, timeout, **_: pool.list_tools(spec, timeout=timeout),
        _models(types.Tool),
    ),
    "list_resources": _op(
        lambda pool, spec, a, timeout, **_: pool.list_resources(spec, timeout=timeout),
        _models(types.Resource),
    ),
    "list_resource_templates": _op(
        lambda pool, spec, a, timeout, **_: pool.list_resource_templates(spec, timeout=timeout),
        _models(types.ResourceTemplate),
    ),
    "list_prompts": _op(
        lambda pool, spec, a, timeout, **_: pool.list_prompts(spec, timeout=timeout),
        _models(types.Prompt),
    ),
    "read_resource": _op(
        lambda pool, spec, a, timeout, relay, **_: pool.read_resource(
            spec, a["uri"], timeout=timeout, relay=relay
        ),
        _model(types.ReadResourceResult),
    ),
    "get_prompt": _op(
        lambda pool, spec, a, timeout, relay, **_: pool.get_prompt(
            spec, a["name"], a.get("arguments"), timeout=timeout, relay=relay
        ),
        _model(types.GetPromptResult),
    ),
    "complete": _op(
        lambda pool, spec, a, timeout, **_: pool.complete(
            spec,
            _ref_adapter.validate_python(a["ref"]),
            a["argument"],
            a.get("context_arguments"),
            timeout=timeout,
        ),
        _model(types.CompleteResult),
    ),
    "ping": _op(lambda pool, spec, a, timeout, **_: pool.ping(spec, timeout=timeout), _plain()),
    "task_request": _op(
        lambda pool, spec, a, timeout, **_: pool.task_request(
            spec, a["method"], a["params"], timeout=timeout
        ),
        _plain(),
    ),
    "subscribe_resource": _op(
        lambda pool, spec, a, timeout, **_: pool.subscribe_resource(
            spec, a["uri"], timeout=timeout
        ),
        _plain(),
    ),
    "discover": _op(
        lambda pool, spec, a, timeout, **_: pool.discover(spec, timeout=timeout),
        ((lambda d: d.to_wire()), Discovery.from_wire),
    ),
}

# Operations addressed by server name only (no spec needed on the worker).
NAME_OPS: dict[str, Op] = {
    "stderr_tail": _op(lambda pool, name: pool.stderr_tail(name), _plain()),
    "close": _op(lambda pool, name: pool.close(name), _plain()),
    "stats": _op(lambda pool, name: pool.stats(), _plain()),
}
