"""Protocol 2026-07-28: stateless requests, each carrying its own `_meta` envelope; no session."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundLadderRejection,
    classify_inbound_request,
)
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp_types import SERVER_INFO_META_KEY

from apps.gateway import context, jsonrpc, protocol
from apps.gateway.auth import EndpointRef, Principal
from apps.gateway.http import HttpError, Request, Send, respond, sse_event, start_sse
from apps.gateway.jsonrpc import RpcError
from apps.gateway.streams import relay_events
from apps.toolsets.events import TOOLS_CHANGED, endpoint_group
from apps.toolsets.exposure import current

CACHEABLE = frozenset(
    {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)


async def handle_modern(
    request: Request,
    send: Send,
    message: dict[str, Any],
    kind: str,
    principal: Principal,
    endpoint: EndpointRef,
    version: object,
) -> None:
    if kind != "request":
        await respond(send, 202)  # no client→server notifications exist on this wire
        return
    route = classify_inbound_request(message, headers=request.headers)
    if isinstance(route, InboundLadderRejection):
        error = RpcError(route.code, route.message, getattr(route, "data", None))
        raise HttpError(
            ERROR_CODE_HTTP_STATUS.get(route.code, 400), jsonrpc.error(message["id"], error)
        )
    if message["method"] == "subscriptions/listen":
        await _listen(request, send, message, endpoint)
        return
    view = await current(endpoint.id, version, page_size=settings.MCPHUB_LIST_PAGE_SIZE)
    ctx = context.Context(principal, endpoint, view, None, route.protocol_version, None)
    try:
        result = await protocol.dispatch(ctx, message["method"], message.get("params") or {})
        result.setdefault("resultType", "complete")
        _stamp_server_info(result)
        if message["method"] in CACHEABLE:
            # Per-user answers that change whenever the owner toggles a tool: never shared, never fresh.
            result.setdefault("cacheScope", "private")
            result.setdefault("ttlMs", 0)
        outcome = jsonrpc.result(message["id"], result)
    except RpcError as exc:
        outcome = jsonrpc.error(message["id"], exc)
    await respond(
        send, 200, jsonrpc.render(outcome).encode(), [(b"content-type", b"application/json")]
    )


def _stamp_server_info(result: dict[str, Any]) -> None:
    """Who answered, on every 2026-07-28 result (`_meta` serverInfo): the stateless wire has no
    initialize result, and the SDK client reads the server's name from this stamp."""
    meta = result.get("_meta")
    if meta is None or (isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None):
        result["_meta"] = {**(meta or {}), SERVER_INFO_META_KEY: dict(context.SERVER_INFO)}


# An endpoint change may touch its tools, prompts or resources: each honored kind is announced.
LISTENABLE = {
    "toolsListChanged": "notifications/tools/list_changed",
    "promptsListChanged": "notifications/prompts/list_changed",
    "resourcesListChanged": "notifications/resources/list_changed",
}


async def _listen(
    request: Request, send: Send, message: dict[str, Any], endpoint: EndpointRef
) -> None:
    """`subscriptions/listen`: the response is the stream; acknowledged first, then change events."""
    wanted = (message.get("params") or {}).get("notifications")
    honored = {
        key: True for key in LISTENABLE if isinstance(wanted, dict) and wanted.get(key) is True
    }
    meta = {SUBSCRIPTION_ID_META_KEY: message["id"]}
    await start_sse(send)

    async def acknowledge() -> None:
        ack = jsonrpc.notification(
            "notifications/subscriptions/acknowledged", {"notifications": honored, "_meta": meta}
        )
        await sse_event(send, jsonrpc.dumps(ack), event="message")

    def translate(event: dict[str, Any]) -> list[dict[str, Any]]:
        if event.get("type") != TOOLS_CHANGED:
            return []
        return [jsonrpc.notification(LISTENABLE[key], {"_meta": meta}) for key in honored]

    await relay_events(
        request,
        send,
        [endpoint_group(endpoint.id)],
        translate,
        event_name="message",
        on_ready=acknowledge,
    )
