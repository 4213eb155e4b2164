"""Minimal raw-ASGI request/response helpers: the MCP path skips Django's request machinery."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from apps.gateway import jsonrpc
from apps.gateway.jsonrpc import INVALID_REQUEST, RpcError

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]

JSON = b"application/json"
SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]


class HttpError(Exception):
    """An HTTP-level refusal (before or instead of any JSON-RPC exchange)."""

    def __init__(
        self,
        status: int,
        body: dict[str, Any] | bytes = b"",
        headers: list[tuple[bytes, bytes]] | None = None,
    ):
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = headers or []


class Request:
    def __init__(self, scope: dict[str, Any], receive: Receive) -> None:
        self.scope = scope
        self.receive = receive
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        self.headers: dict[str, str] = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]
        }
        self.query = parse_qs(scope.get("query_string", b"").decode("latin-1"))

    def query_value(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None

    def accepts(self, media_type: str) -> bool:
        accept = self.headers.get("accept", "")
        return media_type in accept or "*/*" in accept

    async def body(self, limit: int) -> bytes:
        declared = self.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise too_large(limit)
        chunks, size = [], 0
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise ConnectionAbortedError
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise too_large(limit)
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)


def too_large(limit: int) -> HttpError:
    """413 with a JSON-RPC error as its body: MCP clients show an error body of that shape (the SDK's
    does), where a bare status reads "Server returned an error response"."""
    message = (
        f"The request is larger than the hub accepts ({limit} bytes, MCPHUB_MAX_REQUEST_BYTES)"
    )
    error = RpcError(INVALID_REQUEST, message, {"reason": "payload_too_large", "limit": limit})
    return HttpError(413, jsonrpc.error(None, error))


async def respond(
    send: Send,
    status: int,
    body: bytes | dict[str, Any] = b"",
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    all_headers = list(headers or [])
    if isinstance(body, dict):
        body = json.dumps(body, separators=(",", ":")).encode()
        all_headers.append((b"content-type", JSON))
    all_headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body})


async def start_sse(send: Send, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send(
        {"type": "http.response.start", "status": 200, "headers": SSE_HEADERS + list(headers or [])}
    )


async def sse_event(
    send: Send,
    data: str,
    *,
    event: str | None = None,
    event_id: str | None = None,
    more: bool = True,
) -> None:
    lines = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    if event is not None:
        lines.append(f"event: {event}")
    lines.extend(f"data: {line}" for line in data.split("\n"))
    await send(
        {
            "type": "http.response.body",
            "body": ("\n".join(lines) + "\n\n").encode(),
            "more_body": more,
        }
    )


async def sse_comment(send: Send, text: str = "ping") -> None:
    await send({"type": "http.response.body", "body": f": {text}\n\n".encode(), "more_body": True})


async def end_stream(send: Send) -> None:
    await send({"type": "http.response.body", "body": b"", "more_body": False})
