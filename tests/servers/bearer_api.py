"""An MCP server in front of a plain OAuth 2 API, as many are (GitHub's, Google's): it is not
MCP-authorization-aware — no resource metadata, no Bearer challenge — it takes the caller's
`Authorization: Bearer <token>` and asks the API's authorization server whose token it is.

    python bearer_api.py PORT USERINFO_URL

Every request's token is checked at USERINFO_URL (the OpenID Connect userinfo endpoint of the
test identity provider, tests/sso/idp.mjs); a missing or refused token gets 401 with a JSON body
and no challenge, as such APIs answer. Tool `whoami`: the token's owner at the provider and a
fingerprint of the token, so tests see whose token arrived and when it changed. `GET /stats`:
the fingerprints seen and the refusals.
"""

from __future__ import annotations

import hashlib
import sys

import httpx2
import mcp_types as types
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse

server = MCPServer("bearer-api", version="1.0", log_level="WARNING")
USERINFO_URL = ""
STATS: dict[str, object] = {"seen": [], "refused": 0}


def fingerprint(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:12]


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
def whoami(ctx: Context) -> dict[str, str]:
    """Whose token this call carried at the API's authorization server."""
    request = ctx.request_context.request
    return {"sub": request.state.owner["sub"], "token": request.state.fingerprint}


class RequireBearer:
    """ASGI middleware: every request carries a token the authorization server vouches for."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["path"] == "/stats":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        token = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        owner = await self.owner(token) if token else None
        if owner is None:
            STATS["refused"] = int(STATS["refused"]) + 1  # type: ignore[call-overload]
            response = JSONResponse({"message": "Bad credentials"}, status_code=401)
            await response(scope, receive, send)
            return
        scope.setdefault("state", {}).update(owner=owner, fingerprint=fingerprint(token))
        if fingerprint(token) not in STATS["seen"]:  # type: ignore[operator]
            STATS["seen"].append(fingerprint(token))  # type: ignore[union-attr]
        await self.app(scope, receive, send)

    async def owner(self, token: str) -> dict | None:
        async with httpx2.AsyncClient(timeout=10) as http:
            answer = await http.get(USERINFO_URL, headers={"Authorization": f"Bearer {token}"})
        return answer.json() if answer.status_code == 200 else None


async def stats(request: Request) -> JSONResponse:
    return JSONResponse(STATS)


if __name__ == "__main__":
    port, USERINFO_URL = int(sys.argv[1]), sys.argv[2]
    app = server.streamable_http_app(stateless_http=True, json_response=True)
    app.add_route("/stats", stats)
    uvicorn.run(RequireBearer(app), host="127.0.0.1", port=port, log_level="warning")
