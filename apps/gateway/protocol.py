"""The MCP methods an endpoint answers, over any transport.

Lists come from the endpoint's cached view (the catalog); calls, reads and prompt gets are
routed to the backend that owns the item through the connection pool.
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import re2
from asgiref.sync import sync_to_async
from django.conf import settings
from django.urls import reverse
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)

from apps.catalog.models import Tool
from apps.core import public_url
from apps.credentials.errors import CredentialsMissing
from apps.discovery.regex import Regex
from apps.gateway import jsonrpc
from apps.gateway.auth import EndpointRef, Principal
from apps.gateway.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND, RpcError
from apps.gateway.state import Session
from apps.toolsets import calls, naming
from apps.toolsets.exposure import EndpointView, Exposed
from apps.toolsets.models import Endpoint
from apps.toolsets.selectors import disabled_tool_named

SERVER_INFO = {"name": "mcphub", "title": "MCP Hub", "version": "0.1.0"}
CAPABILITIES: dict[str, Any] = {
    "tools": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "prompts": {"listChanged": True},
    "logging": {},
    "completions": {},
}
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


Handler = Callable[[Context, dict[str, Any]], Awaitable[dict[str, Any]]]


def negotiate(requested: Any) -> str:
    return (
        requested
        if isinstance(requested, str) and requested in HANDSHAKE_PROTOCOL_VERSIONS
        else LATEST_HANDSHAKE_VERSION
    )


def initialize_result(version: str) -> dict[str, Any]:
    return {
        "protocolVersion": version,
        "capabilities": CAPABILITIES,
        "serverInfo": SERVER_INFO,
        "instructions": "MCP Hub: the tools this endpoint's owner enabled, from every server they use.",
    }


def discover_result() -> dict[str, Any]:
    return {
        "supportedVersions": list(MODERN_PROTOCOL_VERSIONS),
        "capabilities": CAPABILITIES,
        "serverInfo": SERVER_INFO,
        "cacheScope": "private",
        "ttlMs": 0,
        "resultType": "complete",
    }


async def dispatch(ctx: Context, method: str, params: dict[str, Any]) -> dict[str, Any]:
    handler = HANDLERS.get(method)
    if handler is None:
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
    return await handler(ctx, params)


# -- lists ---------------------------------------------------------------------------


def _page(params: dict[str, Any], total: int, size: int) -> tuple[int, str | None]:
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


async def tools_list(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    if ctx.view.mode == Endpoint.Mode.DYNAMIC:
        from apps.gateway import dynamic

        return await dynamic.tools_list(ctx, params)
    size = settings.MCPHUB_LIST_PAGE_SIZE
    start, next_cursor = _page(params, len(ctx.view.tools), size)
    pages = ctx.view.tool_list_json
    page = pages[start // size] if start // size < len(pages) else "[]"
    result: dict[str, Any] = {"tools": jsonrpc.RawJson(page)}
    if next_cursor:
        result["nextCursor"] = next_cursor
    return result


def _listing(key: str, items: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
    start, next_cursor = _page(params, len(items), settings.MCPHUB_LIST_PAGE_SIZE)
    result: dict[str, Any] = {key: items[start : start + settings.MCPHUB_LIST_PAGE_SIZE]}
    if next_cursor:
        result["nextCursor"] = next_cursor
    return result


async def prompts_list(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    return _listing("prompts", [p.entry for p in ctx.view.prompts.values()], params)


async def resources_list(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    return _listing("resources", ctx.view.resources, params)


async def templates_list(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    return _listing("resourceTemplates", [entry for _, entry in ctx.view.templates], params)


# -- calls ---------------------------------------------------------------------------


def _get_pool():
    from apps.connections.default import get_pool

    return get_pool()


def _string(params: dict[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise RpcError(INVALID_PARAMS, f"Invalid params: '{key}' must be a non-empty string")
    return value


# MCP names are printable, and Postgres refuses NUL in text: a name holding a control character
# is invalid params before any lookup (the disabled-tool hint queries the database by name).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _name(params: dict[str, Any], key: str = "name") -> str:
    name = _string(params, key)
    if _CONTROL.search(name):
        raise RpcError(
            INVALID_PARAMS,
            f"Invalid params: '{key}' holds a control character, which no tool or prompt name can",
        )
    return name


def _mapping(params: dict[str, Any], key: str) -> dict[str, Any]:
    value = params.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RpcError(INVALID_PARAMS, f"Invalid params: '{key}' must be an object")
    return value


def _unknown(kind: str, name: str, names: list[str]) -> RpcError:
    message, suggestions = naming.unknown(kind, name, names)
    return RpcError(INVALID_PARAMS, message, {"suggestions": suggestions} if suggestions else None)


async def _missing_tool(ctx: Context, name: str) -> RpcError:
    """A tool the caller could enable here says so and where; anything else is unknown."""
    tool = await sync_to_async(_disabled_tool, thread_sensitive=False)(ctx.endpoint.id, name)
    if tool is None:
        return _unknown("tool", name, list(ctx.view.tools))
    url = public_url.absolute(reverse("web:tool_list", args=[ctx.endpoint.slug]))
    message = f"Tool {name} ({tool.key}) is not enabled on this endpoint. Enable it on {url} and call it again."
    return RpcError(INVALID_PARAMS, message, {"tool": tool.key, "enable_at": url})


def _disabled_tool(endpoint_id: int, name: str) -> Tool | None:
    endpoint = Endpoint.objects.select_related("owner").get(pk=endpoint_id)
    return disabled_tool_named(endpoint=endpoint, name=name)


def _needs_credentials(exc: CredentialsMissing) -> RpcError:
    return RpcError(
        INVALID_PARAMS,
        exc.message,
        {"server": exc.server, "missing": exc.missing, "fill_at": exc.fill_at, "api": exc.api},
    )


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


async def tools_call(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    name = _name(params)
    arguments = _mapping(params, "arguments")
    if ctx.view.mode == Endpoint.Mode.DYNAMIC:
        from apps.gateway import dynamic

        return await dynamic.tools_call(ctx, name, arguments, params)
    exposed = ctx.view.tools.get(name)
    if exposed is None:
        raise await _missing_tool(ctx, name)
    return await call_exposed(ctx, exposed, arguments, params)


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
            progress=_progress(ctx, _meta(params).get("progressToken")),
            relay=_relay(ctx),
        )
    except calls.ToolError as exc:
        raise RpcError(exc.code, exc.message, exc.data) from None


def _meta(params: dict[str, Any]) -> dict[str, Any]:
    meta = params.get("_meta")
    return meta if isinstance(meta, dict) else {}


def _progress(ctx: Context, token: Any) -> Callable[..., Awaitable[None]] | None:
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


def _relay(ctx: Context):
    """What the backend sends our client during a call: its log lines (at the session's level),
    and its sampling/elicitation/roots requests when our client can answer them."""
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
                answer = await emitter.request(method, _dump(params) if params is not None else {})
            except RpcError as exc:
                return mcp_types.ErrorData(code=exc.code, message=exc.message)
            return getattr(mcp_types, result_model).model_validate(answer)

        return forward

    roots = ask("roots/list", "ListRootsResult", "roots")
    return Relay(
        sampling=ask("sampling/createMessage", "CreateMessageResult", "sampling"),
        elicitation=ask("elicitation/create", "ElicitResult", "elicitation"),
        list_roots=_roots(roots) if roots else None,
        log=_log_sink(ctx),
    )


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


async def prompts_get(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from mcp import MCPError

    name = _name(params)
    exposed = ctx.view.prompts.get(name)
    if exposed is None:
        raise _unknown("prompt", name, list(ctx.view.prompts))
    arguments = {str(k): str(v) for k, v in _mapping(params, "arguments").items()}
    try:
        result = await _get_pool().get_prompt(
            ctx.view.spec(exposed.server), exposed.backend_name, arguments, relay=_relay(ctx)
        )
    except MCPError as exc:
        raise RpcError(exc.code, exc.message, exc.data) from None
    except CredentialsMissing as exc:
        raise _needs_credentials(exc) from None
    return _dump(result)


def _template_regex(template: str) -> Regex:
    """A backend's URI template as a regex, on RE2: with Python's backtracking `re`, a template of
    consecutive `{+x}` (`.+.+.+…`) against a long URI a client sends takes time exponential in
    their number (six and 120 characters: 23 s)."""
    parts = re.split(r"(\{[^}]*\})", template)
    pattern = "".join(
        (".+" if part.startswith("{+") else "[^/]+") if part.startswith("{") else re2.escape(part)
        for part in parts
    )
    return re2.compile(f"^{pattern}$", _TEMPLATE_OPTIONS)


_TEMPLATE_OPTIONS = re2.Options()
_TEMPLATE_OPTIONS.log_errors = False
_TEMPLATE_OPTIONS.never_capture = True


def _resource_server(view: EndpointView, uri: str) -> str:
    server = view.resource_servers.get(uri)
    if server is not None:
        return server
    for owner, entry in view.templates:
        try:
            if _template_regex(entry["uriTemplate"]).match(uri):
                return owner
        except re2.error:  # a template too large for RE2 matches nothing
            continue
    raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})


async def resources_read(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from mcp import MCPError

    uri = _string(params, "uri")
    server = _resource_server(ctx.view, uri)
    try:
        result = await _get_pool().read_resource(ctx.view.spec(server), uri, relay=_relay(ctx))
    except MCPError as exc:
        raise RpcError(exc.code, exc.message, exc.data) from None
    except CredentialsMissing as exc:
        raise _needs_credentials(exc) from None
    return _dump(result)


async def completion_complete(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    import mcp_types
    from mcp import MCPError

    ref, argument = _mapping(params, "ref"), _completion_argument(params)
    if ref.get("type") == "ref/prompt":
        exposed = ctx.view.prompts.get(str(ref.get("name")))
        if exposed is None:
            raise _unknown("prompt", str(ref.get("name")), list(ctx.view.prompts))
        server, backend_ref = (
            exposed.server,
            mcp_types.PromptReference(type="ref/prompt", name=exposed.backend_name),
        )
    elif ref.get("type") == "ref/resource":
        server = _resource_server(ctx.view, _string(ref, "uri"))
        backend_ref = mcp_types.ResourceTemplateReference(type="ref/resource", uri=ref["uri"])
    else:
        raise RpcError(
            INVALID_PARAMS, "Invalid params: ref.type must be 'ref/prompt' or 'ref/resource'"
        )
    context = _string_map(_mapping(params, "context"), "arguments", "context.arguments")
    try:
        result = await _get_pool().complete(
            ctx.view.spec(server), backend_ref, argument, context or None
        )
    except MCPError as exc:
        raise RpcError(exc.code, exc.message, exc.data) from None
    except CredentialsMissing as exc:
        raise _needs_credentials(exc) from None
    return _dump(result)


def _completion_argument(params: dict[str, Any]) -> dict[str, str]:
    argument = params.get("argument")
    if not (
        isinstance(argument, dict)
        and isinstance(argument.get("name"), str)
        and isinstance(argument.get("value"), str)
    ):
        raise RpcError(
            INVALID_PARAMS,
            "Invalid params: 'argument' must be an object with string 'name' and 'value'",
        )
    return {"name": argument["name"], "value": argument["value"]}


def _string_map(params: dict[str, Any], key: str, label: str) -> dict[str, str]:
    value = _mapping(params, key)
    if not all(isinstance(v, str) for v in value.values()):
        raise RpcError(INVALID_PARAMS, f"Invalid params: '{label}' must map names to strings")
    return value


# -- session-level -------------------------------------------------------------------


async def ping(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    return {}


async def set_level(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from apps.gateway import state

    level = params.get("level")
    if level not in LOG_LEVELS:
        raise RpcError(
            INVALID_PARAMS, f"Invalid params: level must be one of {', '.join(LOG_LEVELS)}"
        )
    if ctx.session is not None:
        ctx.session.log_level = level
        await state.save_session(ctx.session)
    return {}


async def subscribe(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    return await _subscription(ctx, params, add=True)


async def unsubscribe(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    return await _subscription(ctx, params, add=False)


async def _subscription(ctx: Context, params: dict[str, Any], *, add: bool) -> dict[str, Any]:
    from mcp import MCPError

    from apps.connections.errors import PoolError
    from apps.gateway import state, subscriptions

    uri = _string(params, "uri")
    server = _resource_server(ctx.view, uri)
    if ctx.session is not None:
        try:
            if add:
                await subscriptions.subscribe(
                    server=server, spec=ctx.view.spec(server), uri=uri, session_id=ctx.session.id
                )
            else:
                await subscriptions.unsubscribe(server=server, uri=uri, session_id=ctx.session.id)
        except MCPError as exc:
            raise RpcError(
                exc.code, f"{server} cannot subscribe to {uri}: {exc.message}", exc.data
            ) from None
        except PoolError as exc:
            raise RpcError(
                jsonrpc.INTERNAL_ERROR, f"{server} is unavailable: {exc.message}"
            ) from None
        subscriptions = set(ctx.session.subscriptions)
        subscriptions.add(uri) if add else subscriptions.discard(uri)
        ctx.session.subscriptions = sorted(subscriptions)
        await state.save_session(ctx.session)
    return {}


async def discover(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    return discover_result()


HANDLERS: dict[str, Handler] = {
    "ping": ping,
    "tools/list": tools_list,
    "tools/call": tools_call,
    "prompts/list": prompts_list,
    "prompts/get": prompts_get,
    "resources/list": resources_list,
    "resources/templates/list": templates_list,
    "resources/read": resources_read,
    "resources/subscribe": subscribe,
    "resources/unsubscribe": unsubscribe,
    "completion/complete": completion_complete,
    "logging/setLevel": set_level,
    "server/discover": discover,
}


def new_request_id() -> str:
    return f"mcphub-{uuid.uuid4().hex}"
