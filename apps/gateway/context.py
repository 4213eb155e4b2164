"""What every MCP method handler works with: the request's context (who, which endpoint and view,
the session, the client-facing emitter), parameter checks, paged listings, and calling a tool as
the caller (toolsets.calls), with progress and the backend's server→client traffic relayed."""

from __future__ import annotations

import base64
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from django.conf import settings

from apps.credentials.errors import CredentialsMissing
from apps.gateway import elicitations
from apps.gateway.auth import EndpointRef, Principal
from apps.gateway.jsonrpc import INVALID_PARAMS, RpcError
from apps.gateway.state import Session
from apps.toolsets import calls, naming
from apps.toolsets.exposure import EndpointView, Exposed

SERVER_INFO = {"name": "mcphub", "title": "MCP Hub", "version": "0.1.0"}


LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class Emitter(Protocol):
    """The client-facing side of one request: notifications and server→client requests."""

    can_request: bool

    async def notify(self, method: str, params: dict[str, Any]) -> None: ...

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]: ...


@dataclass
class Context:
    principal: Principal
    endpoint: EndpointRef
    view: EndpointView
    session: Session | None
    protocol_version: str
    emitter: Emitter | None = None


def paginate(params: dict[str, Any], total: int, size: int) -> tuple[int, str | None]:
    """(start offset, next cursor) for a cursor-paginated list."""
    cursor = params.get("cursor")
    start = 0
    if cursor is not None:
        try:
            start = int(base64.urlsafe_b64decode(str(cursor).encode()).decode())
        except (ValueError, UnicodeDecodeError):
            raise RpcError(INVALID_PARAMS, "Invalid cursor") from None
        if not 0 <= start <= total:
            raise RpcError(INVALID_PARAMS, "Invalid cursor")
    end = start + size
    return start, base64.urlsafe_b64encode(str(end).encode()).decode() if end < total else None


def listing(key: str, items: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
    start, next_cursor = paginate(params, len(items), settings.MCPHUB_LIST_PAGE_SIZE)
    result: dict[str, Any] = {key: items[start : start + settings.MCPHUB_LIST_PAGE_SIZE]}
    if next_cursor:
        result["nextCursor"] = next_cursor
    return result


def param_string(params: dict[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise RpcError(INVALID_PARAMS, f"Invalid params: '{key}' must be a non-empty string")
    return value


# MCP names are printable, and Postgres refuses NUL in text: a name holding a control character
# is invalid params before any lookup (the disabled-tool hint queries the database by name).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def param_name(params: dict[str, Any], key: str = "name") -> str:
    name = param_string(params, key)
    if _CONTROL.search(name):
        raise RpcError(
            INVALID_PARAMS,
            f"Invalid params: '{key}' holds a control character, which no tool or prompt name can",
        )
    return name


def param_mapping(params: dict[str, Any], key: str) -> dict[str, Any]:
    value = params.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RpcError(INVALID_PARAMS, f"Invalid params: '{key}' must be an object")
    return value


def unknown(kind: str, name: str, names: list[str]) -> RpcError:
    message, suggestions = naming.unknown(kind, name, names)
    return RpcError(INVALID_PARAMS, message, {"suggestions": suggestions} if suggestions else None)


def needs_credentials(exc: CredentialsMissing) -> RpcError:
    """A backend the caller has not filled credentials for: what to fill, and where."""
    return RpcError(
        INVALID_PARAMS,
        exc.message,
        {"server": exc.server, "missing": exc.missing, "fill_at": exc.fill_at, "api": exc.api},
    )


def dump(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


async def call_exposed(
    ctx: Context, exposed: Exposed, arguments: dict[str, Any], params: dict[str, Any]
) -> dict[str, Any]:
    """Call `exposed` as the caller (toolsets.calls: logged there); a backend's JSON-RPC error
    stays one for our client."""
    try:
        return await calls.call_tool(
            user_id=ctx.principal.user_id,
            endpoint_id=ctx.endpoint.id,
            view=ctx.view,
            exposed=exposed,
            arguments=arguments,
            progress=progress_sender(ctx, meta_of(params).get("progressToken")),
            relay=relay_for(ctx),
            ask_user=elicitations.asker(ctx.principal.user_id, ctx.session),
        )
    except calls.ToolError as exc:
        raise RpcError(exc.code, exc.message, exc.data) from None


def meta_of(params: dict[str, Any]) -> dict[str, Any]:
    meta = params.get("_meta")
    return meta if isinstance(meta, dict) else {}


def progress_sender(ctx: Context, token: Any) -> Callable[..., Awaitable[None]] | None:
    emitter = ctx.emitter
    if token is None or emitter is None:
        return None

    async def send(progress: float, total: float | None, message: str | None) -> None:
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await emitter.notify("notifications/progress", params)

    return send


def relay_for(ctx: Context):
    """What the backend sends our client during a call: its log lines (at the session's level),
    and its sampling/elicitation/roots requests (and URL elicitations' completions) when our
    client can answer them."""
    from apps.connections.hooks import Relay

    emitter = ctx.emitter
    if emitter is None:
        return None
    caps = ctx.session.client_capabilities if ctx.session else {}
    can_ask = emitter.can_request

    def ask(method: str, result_model: str, capability: str):
        if not (can_ask and capability in caps):
            return None

        async def forward(params: Any) -> Any:
            import mcp_types

            try:
                answer = await emitter.request(method, dump(params) if params is not None else {})
            except RpcError as exc:
                return mcp_types.ErrorData(code=exc.code, message=exc.message)
            return getattr(mcp_types, result_model).model_validate(answer)

        return forward

    roots = ask("roots/list", "ListRootsResult", "roots")
    return Relay(
        sampling=ask("sampling/createMessage", "CreateMessageResultWithTools", "sampling"),
        elicitation=ask("elicitation/create", "ElicitResult", "elicitation"),
        list_roots=_roots(roots) if roots else None,
        log=_log_sink(ctx),
        elicitation_complete=_completion_sink(emitter) if "elicitation" in caps else None,
        caller=ctx.principal.user_id,  # as toolsets.calls sets it (built once, not replaced there)
    )


def _completion_sink(emitter):
    async def complete(params: dict[str, Any]) -> None:
        await emitter.notify(elicitations.COMPLETE, params)

    return complete


def _log_sink(ctx: Context):
    """Log lines at or above the level the client set (all of them if it never set one)."""
    emitter = ctx.emitter
    threshold = (
        LOG_LEVELS.index(ctx.session.log_level)
        if ctx.session and ctx.session.log_level in LOG_LEVELS
        else 0
    )

    async def log(params: dict[str, Any]) -> None:
        level = params.get("level")
        if level not in LOG_LEVELS or LOG_LEVELS.index(level) >= threshold:
            await emitter.notify("notifications/message", params)

    return log


def _roots(forward):
    async def list_roots() -> Any:
        return await forward(None)

    return list_roots
