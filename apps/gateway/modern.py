"""Protocol 2026-07-28: stateless requests, each carrying its own `_meta` envelope; no session."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS, InboundLadderRejection, classify_inbound_request

from apps.gateway import jsonrpc, protocol
from apps.gateway.auth import EndpointRef, Principal
from apps.gateway.http import HttpError, Request, Send, respond
from apps.gateway.jsonrpc import RpcError
from apps.gateway.view import current


CACHEABLE = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"})


async def handle_modern(
    request: Request, send: Send, message: dict[str, Any], kind: str, principal: Principal, endpoint: EndpointRef, version: object
) -> None:
    if kind != "request":
        await respond(send, 202)  # no client→server notifications exist on this wire
        return
    route = classify_inbound_request(message, headers=request.headers)
    if isinstance(route, InboundLadderRejection):
        error = RpcError(route.code, route.message, getattr(route, "data", None))
        raise HttpError(ERROR_CODE_HTTP_STATUS.get(route.code, 400), jsonrpc.error(message["id"], error))
    view = await current(endpoint.id, version, page_size=settings.MCPHUB_LIST_PAGE_SIZE)
    ctx = protocol.Context(principal, endpoint, view, None, route.protocol_version, None)
    try:
        result = await protocol.dispatch(ctx, message["method"], message.get("params") or {})
        result.setdefault("resultType", "complete")
        if message["method"] in CACHEABLE:
            # Per-user answers that change whenever the owner toggles a tool: never shared, never fresh.
            result.setdefault("cacheScope", "private")
            result.setdefault("ttlMs", 0)
        outcome = jsonrpc.result(message["id"], result)
    except RpcError as exc:
        outcome = jsonrpc.error(message["id"], exc)
    await respond(send, 200, jsonrpc.render(outcome).encode(), [(b"content-type", b"application/json")])
