"""A small REST API of our own (aiohttp, no Django), with its OpenAPI document, for the openapi tests.

It runs on its own event loop in a thread, so sync and async tests, the embedded hub and a hub in
other processes all reach it over real HTTP. It covers path/query/header/cookie parameters, JSON
and form bodies, every auth scheme the transport speaks (API key in header, query and cookie,
bearer, basic, OAuth 2 client credentials with expiring tokens), errors, a large body, text, an
image, a redirect; it counts the requests it served so a test can tell none was sent.
Petstore: the public Swagger 2.0 and OpenAPI 3.0 Petstore documents (petstore_documents.py)
served under /petstore/v2 and /petstore/v3 with a small stub of the pets behind them.
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import threading
from collections import Counter
from typing import Any

import yaml
from aiohttp import web

from tests.openapi import petstore_documents

API_KEY = "key-123"
BEARER = "bearer-456"
BASIC = ("ann", "pw-789")
CLIENT = ("client-1", "client-secret")
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
BIG_ITEMS = 5000  # ~300 kB of JSON: beyond the text a tool result shows


def document(base: str) -> dict[str, Any]:
    """The API's own OpenAPI 3.0 document; `Item` lives in a second document (a remote $ref)."""
    item = {"$ref": f"{base}/defs.json#/Item"}
    json_body = lambda schema: {"content": {"application/json": {"schema": schema}}}  # noqa: E731
    ok = lambda schema: {"200": {"description": "ok", **json_body(schema)}}  # noqa: E731
    secured = lambda name: {  # noqa: E731
        "operationId": f"whoami_{name}",
        "tags": ["auth"],
        "security": [{name: []}],
        "responses": ok({"type": "object"}),
    }
    return {
        "openapi": "3.0.3",
        "info": {"title": "Test API", "version": "1.0"},
        "servers": [{"url": "{root}/v1", "variables": {"root": {"default": base}}}],
        "components": {
            "securitySchemes": {
                "headerKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                "queryKey": {"type": "apiKey", "in": "query", "name": "api_key"},
                "cookieKey": {"type": "apiKey", "in": "cookie", "name": "key"},
                "bearer": {"type": "http", "scheme": "bearer"},
                "basic": {"type": "http", "scheme": "basic"},
                "oauth": {
                    "type": "oauth2",
                    "flows": {
                        "clientCredentials": {
                            "tokenUrl": f"{base}/oauth/token",
                            "scopes": {"read": "read things"},
                        }
                    },
                },
            }
        },
        "paths": {
            "/items/{itemId}": {
                "get": {
                    "operationId": "getItem",
                    "summary": "One item",
                    "description": "Echoes what it was sent.",
                    "tags": ["items"],
                    "parameters": [
                        {
                            "name": "itemId",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer"},
                        },
                        {
                            "name": "color",
                            "in": "query",
                            "schema": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                        },
                        {
                            "name": "tags",
                            "in": "query",
                            "schema": {"type": "array", "items": {"type": "string"}},
                        },
                        {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                        {"name": "session", "in": "cookie", "schema": {"type": "string"}},
                    ],
                    "responses": ok(item),
                },
                "delete": {
                    "operationId": "deleteItem",
                    "tags": ["items"],
                    "parameters": [
                        {
                            "name": "itemId",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer"},
                        }
                    ],
                    "responses": {"204": {"description": "gone"}},
                },
            },
            "/items": {
                "post": {
                    "operationId": "createItem",
                    "tags": ["items"],
                    "requestBody": {"required": True, **json_body(item)},
                    "responses": {"201": {"description": "made", **json_body(item)}},
                },
                "get": {
                    "operationId": "listItems",
                    "tags": ["items"],
                    "responses": ok({"type": "array", "items": item}),
                },
            },
            "/items/{itemId}/label": {
                "put": {
                    "tags": ["items"],
                    "parameters": [
                        {
                            "name": "itemId",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer"},
                        }
                    ],
                    "requestBody": {
                        "content": {
                            "application/x-www-form-urlencoded": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"label": {"type": "string"}},
                                    "required": ["label"],
                                }
                            }
                        }
                    },
                    "responses": ok({"type": "object"}),
                }
            },
            "/whoami/header": {"get": secured("headerKey")},
            "/whoami/query": {"get": secured("queryKey")},
            "/whoami/cookie": {"get": secured("cookieKey")},
            "/whoami/bearer": {"get": secured("bearer")},
            "/whoami/basic": {"get": secured("basic")},
            "/whoami/oauth": {"get": {**secured("oauth"), "security": [{"oauth": ["read"]}]}},
            "/big": {"get": {"operationId": "bigList", "responses": ok({"type": "array"})}},
            "/text": {
                "get": {
                    "operationId": "plainText",
                    "responses": {"200": {"description": "ok", "content": {"text/plain": {}}}},
                }
            },
            "/image": {
                "get": {
                    "operationId": "pixel",
                    "responses": {"200": {"description": "ok", "content": {"image/png": {}}}},
                }
            },
            "/fail": {"get": {"operationId": "fail", "responses": ok({"type": "object"})}},
            "/moved": {"get": {"operationId": "moved", "responses": ok(item)}},
        },
    }


DEFS = {
    "Item": {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "name": {"type": "string"},
            "price": {"type": "number", "nullable": True},
        },
        "required": ["name"],
    }
}


def _answer(make: Any) -> Any:
    async def handler(request: web.Request) -> web.StreamResponse:
        return make()

    return handler


class RestApi:
    """The running API: `url`, `requests` (path → count), `tokens_issued`, `document_text`."""

    def __init__(self) -> None:
        self.url = ""
        self.requests: Counter[str] = Counter()
        self.tokens_issued = 0
        self.token_lifetime = 3600
        self._tokens: set[str] = set()
        self.document_override: str | None = None
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> RestApi:
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True, name="rest-api").start()
        if not ready.wait(20):
            raise RuntimeError("the test REST API did not start")
        return self

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._runner = web.AppRunner(self._app())
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        ready.set()
        self._loop.run_forever()

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)

    # -- routes --------------------------------------------------------------------------

    def _app(self) -> web.Application:
        app = web.Application(middlewares=[self._count])
        r = app.router
        r.add_get("/openapi.json", self._document_json)
        r.add_get("/openapi.yaml", self._document_yaml)
        r.add_get("/defs.json", _answer(lambda: web.json_response(DEFS)))
        r.add_get("/v1/items/{id}", self._get_item)
        r.add_delete("/v1/items/{id}", _answer(lambda: web.Response(status=204)))
        r.add_post("/v1/items", self._create_item)
        r.add_get("/v1/items", _answer(lambda: web.json_response([{"id": 1, "name": "one"}])))
        r.add_put("/v1/items/{id}/label", self._label)
        for kind in ("header", "query", "cookie", "bearer", "basic", "oauth"):
            r.add_get(f"/v1/whoami/{kind}", self._whoami)
        r.add_post("/oauth/token", self._token)
        r.add_get("/v1/big", self._big)
        r.add_get("/v1/text", _answer(lambda: web.Response(text="plain words\n" * 3)))
        r.add_get("/v1/image", _answer(lambda: web.Response(body=PNG, content_type="image/png")))
        r.add_get(
            "/v1/fail",
            _answer(lambda: web.json_response({"detail": "the disk is on fire"}, status=500)),
        )
        r.add_get("/v1/moved", self._moved)
        petstore_documents.add_routes(r)
        return app

    @web.middleware
    async def _count(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests[request.path] += 1
        return await handler(request)

    async def _document_json(self, request: web.Request) -> web.Response:
        text = self.document_override or json.dumps(document(self.url))
        return web.Response(text=text, content_type="application/json")

    async def _document_yaml(self, request: web.Request) -> web.Response:
        return web.Response(
            text=yaml.safe_dump(document(self.url)), content_type="application/yaml"
        )

    async def _get_item(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "id": int(request.match_info["id"]),
                "name": "echo",
                "color": request.query.get("color"),
                "tags": request.query.getall("tags", []),
                "trace": request.headers.get("X-Trace"),
                "session": request.cookies.get("session"),
            }
        )

    async def _create_item(self, request: web.Request) -> web.Response:
        body = await request.json()
        return web.json_response({"id": 99, **body}, status=201)

    async def _label(self, request: web.Request) -> web.Response:
        form = await request.post()
        return web.json_response({"id": int(request.match_info["id"]), "label": form.get("label")})

    async def _whoami(self, request: web.Request) -> web.Response:
        kind = request.path.rsplit("/", 1)[-1]
        if not self._authorized(kind, request):
            return web.json_response({"detail": "who are you?"}, status=401)
        return web.json_response({"scheme": kind, "ok": True})

    def _authorized(self, kind: str, request: web.Request) -> bool:
        auth = request.headers.get("Authorization", "")
        if kind == "header":
            return request.headers.get("X-API-Key") == API_KEY
        if kind == "query":
            return request.query.get("api_key") == API_KEY
        if kind == "cookie":
            return request.cookies.get("key") == API_KEY
        if kind == "bearer":
            return auth == f"Bearer {BEARER}"
        if kind == "basic":
            return auth == "Basic " + base64.b64encode(":".join(BASIC).encode()).decode()
        return auth.removeprefix("Bearer ") in self._tokens

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        expected = "Basic " + base64.b64encode(":".join(CLIENT).encode()).decode()
        if (
            request.headers.get("Authorization") != expected
            or form.get("grant_type") != "client_credentials"
        ):
            return web.json_response({"error": "invalid_client"}, status=401)
        self.tokens_issued += 1
        token = secrets.token_urlsafe(8)
        self._tokens = {token}  # the previous token stops working: a renewal is needed
        return web.json_response(
            {"access_token": token, "token_type": "Bearer", "expires_in": self.token_lifetime}
        )

    async def _moved(self, request: web.Request) -> web.Response:
        raise web.HTTPFound("/v1/items/1")

    async def _big(self, request: web.Request) -> web.Response:
        return web.json_response([{"id": i, "name": f"item number {i}"} for i in range(BIG_ITEMS)])

    def petstore_v3_text(self) -> str:
        return petstore_documents.V3_TEXT

    def revoke_tokens(self) -> None:
        self._tokens = set()


if __name__ == "__main__":  # benchmarks/openapi.py runs it in a process of its own
    import sys
    import time

    running = RestApi().start()
    print(running.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        running.stop()
        sys.exit(0)
