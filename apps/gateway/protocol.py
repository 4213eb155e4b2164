"""The MCP methods an endpoint answers, over any transport.

Lists come from the endpoint's cached view (the catalog); calls, reads and prompt gets are
routed to the backend that owns the item through the connection pool.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings
from django.urls import reverse
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)

from apps.catalog.models import Tool
from apps.core import public_url
from apps.core.threads import in_thread
from apps.credentials.errors import CredentialsMissing
from apps.gateway import dynamic, jsonrpc, mcp_tasks
from apps.gateway.context import (
    LOG_LEVELS,
    SERVER_INFO,
    Context,
    call_exposed,
    dump,
    listing,
    needs_credentials,
    paginate,
    param_mapping,
    param_name,
    param_string,
    relay_for,
    unknown,
)
from apps.gateway.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND, RpcError
from apps.toolsets.exposure import EndpointView
from apps.toolsets.models import Endpoint
from apps.toolsets.selectors import disabled_tool_named

CAPABILITIES: dict[str, Any] = {
    "tools": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "prompts": {"listChanged": True},
    "logging": {},
    "completions": {},
}


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
        "capabilities": (
            {**CAPABILITIES, "tasks": mcp_tasks.CAPABILITY}
            if mcp_tasks.supported(version)
            else CAPABILITIES
        ),
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


async def tools_list(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    if ctx.view.mode == Endpoint.Mode.DYNAMIC:
        return await dynamic.tools_list(ctx, params)
    size = settings.MCPHUB_LIST_PAGE_SIZE
    start, next_cursor = paginate(params, len(ctx.view.tools), size)
    pages = ctx.view.tool_list_json
    page = pages[start // size] if start // size < len(pages) else "[]"
    result: dict[str, Any] = {"tools": jsonrpc.RawJson(page)}
    if next_cursor:
        result["nextCursor"] = next_cursor
    return result


async def prompts_list(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    return listing("prompts", [p.entry for p in ctx.view.prompts.values()], params)


async def resources_list(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    return listing("resources", ctx.view.resources, params)


async def templates_list(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    return listing("resourceTemplates", [entry for _, entry in ctx.view.templates], params)


# -- calls ---------------------------------------------------------------------------


def _get_pool():
    from apps.connections.default import get_pool

    return get_pool()


async def _missing_tool(ctx: Context, name: str) -> RpcError:
    """A tool the caller could enable here says so and where; anything else is unknown."""
    tool = await in_thread(_disabled_tool)(ctx.endpoint.id, name)
    if tool is None:
        return unknown("tool", name, list(ctx.view.tools))
    url = public_url.absolute(reverse("web:tool_list", args=[ctx.endpoint.slug]))
    message = f"Tool {name} ({tool.key}) is not enabled on this endpoint. Enable it on {url} and call it again."
    return RpcError(INVALID_PARAMS, message, {"tool": tool.key, "enable_at": url})


def _disabled_tool(endpoint_id: int, name: str) -> Tool | None:
    endpoint = Endpoint.objects.select_related("owner").get(pk=endpoint_id)
    return disabled_tool_named(endpoint=endpoint, name=name)


async def tools_call(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    name = param_name(params)
    arguments = param_mapping(params, "arguments")
    if mcp_tasks.requested(ctx, params):
        return await mcp_tasks.call(ctx, name, arguments, params)
    if ctx.view.mode == Endpoint.Mode.DYNAMIC:
        return await dynamic.tools_call(ctx, name, arguments, params)
    exposed = ctx.view.tools.get(name)
    if exposed is None:
        raise await _missing_tool(ctx, name)
    mcp_tasks.check_plain_call(ctx, exposed)
    return await call_exposed(ctx, exposed, arguments, params)


async def prompts_get(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from mcp import MCPError

    name = param_name(params)
    exposed = ctx.view.prompts.get(name)
    if exposed is None:
        raise unknown("prompt", name, list(ctx.view.prompts))
    arguments = {str(k): str(v) for k, v in param_mapping(params, "arguments").items()}
    try:
        result = await _get_pool().get_prompt(
            ctx.view.spec(exposed.server), exposed.backend_name, arguments, relay=relay_for(ctx)
        )
    except MCPError as exc:
        raise RpcError(exc.code, exc.message, exc.data) from None
    except CredentialsMissing as exc:
        raise needs_credentials(exc) from None
    return dump(result)


def _resource_server(view: EndpointView, uri: str) -> str:
    server = view.resource_server(uri)
    if server is None:
        raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})
    return server


async def resources_read(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from mcp import MCPError

    uri = param_string(params, "uri")
    server = _resource_server(ctx.view, uri)
    try:
        result = await _get_pool().read_resource(ctx.view.spec(server), uri, relay=relay_for(ctx))
    except MCPError as exc:
        raise RpcError(exc.code, exc.message, exc.data) from None
    except CredentialsMissing as exc:
        raise needs_credentials(exc) from None
    return dump(result)


async def completion_complete(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    import mcp_types
    from mcp import MCPError

    ref, argument = param_mapping(params, "ref"), _completion_argument(params)
    if ref.get("type") == "ref/prompt":
        exposed = ctx.view.prompts.get(str(ref.get("name")))
        if exposed is None:
            raise unknown("prompt", str(ref.get("name")), list(ctx.view.prompts))
        server, backend_ref = (
            exposed.server,
            mcp_types.PromptReference(type="ref/prompt", name=exposed.backend_name),
        )
    elif ref.get("type") == "ref/resource":
        server = _resource_server(ctx.view, param_string(ref, "uri"))
        backend_ref = mcp_types.ResourceTemplateReference(type="ref/resource", uri=ref["uri"])
    else:
        raise RpcError(
            INVALID_PARAMS, "Invalid params: ref.type must be 'ref/prompt' or 'ref/resource'"
        )
    context = _string_map(param_mapping(params, "context"), "arguments", "context.arguments")
    try:
        result = await _get_pool().complete(
            ctx.view.spec(server), backend_ref, argument, context or None
        )
    except MCPError as exc:
        raise RpcError(exc.code, exc.message, exc.data) from None
    except CredentialsMissing as exc:
        raise needs_credentials(exc) from None
    return dump(result)


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
    value = param_mapping(params, key)
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

    uri = param_string(params, "uri")
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
    **mcp_tasks.HANDLERS,
}
