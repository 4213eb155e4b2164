"""Call the MCP gateway's ASGI app in-process: fast enough for fuzzing and permission matrices."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from apps.gateway.transport import Gateway

BASE_HEADERS = {
    "host": "127.0.0.1",
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
}


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def rpc_error_code(self) -> int | None:
        try:
            error = self.json().get("error")
        except (ValueError, AttributeError):
            return None
        return error.get("code") if isinstance(error, dict) else None


async def call(
    app: Gateway,
    path: str,
    body: bytes = b"",
    *,
    method: str = "POST",
    headers: dict[str, str] | None = None,
) -> Reply:
    """One request; the client disconnects once the response is complete (or after 10 s)."""
    all_headers = {**BASE_HEADERS, **(headers or {})}
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": b"",
        "client": ("127.0.0.1", 40000),
        "headers": [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in all_headers.items()
        ],
    }
    done = asyncio.Event()
    delivered = False
    status, response_headers, chunks = 0, {}, []

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, response_headers
        if message["type"] == "http.response.start":
            status = message["status"]
            response_headers = {
                k.decode("latin-1"): v.decode("latin-1") for k, v in message.get("headers", [])
            }
        else:
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                done.set()

    await asyncio.wait_for(app(scope, receive, send), 10)
    done.set()
    return Reply(status, response_headers, b"".join(chunks))
