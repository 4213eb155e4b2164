"""The `openapi` transport: a REST API described by an OpenAPI document, served as an MCP server.

The transport runs a low-level MCP `Server` in the worker's own event loop and hands the pool the
client end of an in-memory stream pair (`mcp.shared.memory`): the pool, the session, the breaker,
timeouts, the concurrency limit, metrics and the call log treat it exactly like any other backend,
and a tool call becomes one HTTP request built from the operation (openapi_ops.py).

The spec carries the document (validated, remote `$ref`s inlined by apps/catalog/openapi.py) in
`ServerSpec.openapi`, the API's base URL in `url`, and the credentials in `headers`: a key
`scheme:NAME` holds the value for the document's security scheme NAME (an API key, a bearer token,
`user:password` for basic, `client_id:client_secret` for OAuth 2 client credentials); any other
key is a header sent with every request. Values may be `${user:NAME}` like any header.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import anyio
import httpx2
import jsonschema
import mcp_types as types
from mcp.server import Server
from mcp.shared.memory import create_client_server_memory_streams

from apps.connections.sdk import TransportStreams
from apps.connections.specs import ServerSpec
from apps.connections.transports.guard import async_client_kwargs
from apps.connections.transports.openapi_ops import Operation, operations, security_schemes
from apps.connections.transports.stdio import ChildProcess

SCHEME_PREFIX = "scheme:"
MAX_TEXT = 100_000  # characters of a response body shown as text
MAX_STRUCTURED = 2_000_000  # bytes of a JSON body still parsed into structuredContent
MAX_BODY = 20_000_000  # bytes read from a response at most
ERROR_EXCERPT = 2_000
MAX_REDIRECTS = 5
_LIMITS = httpx2.Limits(max_connections=None, max_keepalive_connections=32)
_TOKEN_MARGIN = 30.0  # seconds before a client-credentials token expires that it is renewed


@dataclass(frozen=True)
class ApiConfig:
    """What the transport reads from a spec: the document's tools and how to reach the API."""

    operations: dict[str, Operation]
    schemes: dict[str, dict[str, Any]]
    base_url: str
    headers: dict[str, str]  # sent as they are
    secrets: dict[str, str]  # scheme name → value

    @classmethod
    def from_spec(cls, spec: ServerSpec) -> ApiConfig:
        blob = json.loads(spec.openapi)
        document = blob["document"]
        ops = operations(document, include=blob.get("include", ()), exclude=blob.get("exclude", ()))
        headers = {k: v for k, v in spec.headers.items() if not k.startswith(SCHEME_PREFIX)}
        secrets = {
            k[len(SCHEME_PREFIX) :]: v
            for k, v in spec.headers.items()
            if k.startswith(SCHEME_PREFIX)
        }
        return cls(
            {op.tool: op for op in ops}, security_schemes(document), spec.url, headers, secrets
        )

    def tools(self) -> list[types.Tool]:
        return [
            types.Tool(
                name=op.tool,
                description=op.description,
                input_schema=op.input_schema,
                output_schema=op.output_schema,
                annotations=types.ToolAnnotations(**op.annotations),
            )
            for op in self.operations.values()
        ]


class ArgumentProblem(ValueError):
    """A call's arguments do not fit the operation; said before any request is sent."""


def check_arguments(op: Operation, arguments: Mapping[str, Any]) -> None:
    """Validate `arguments` against the tool's input schema, naming the argument at fault."""
    validator = op.validator
    if validator is None:  # built once per operation and connection
        validator = op.validator = jsonschema.Draft202012Validator(op.input_schema)
    if validator.is_valid(arguments):
        return
    errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.absolute_path))
    messages = []
    for error in errors[:5]:
        where = ".".join(str(p) for p in error.absolute_path)
        if error.validator == "required":
            messages.append(f"missing required argument {error.message.split(' ')[0]}")
        elif where:
            messages.append(f"argument {where!r}: {error.message}")
        else:
            messages.append(error.message)
    raise ArgumentProblem(f"{op.tool}: " + "; ".join(messages))


def build_request(
    config: ApiConfig, op: Operation, arguments: Mapping[str, Any]
) -> tuple[str, dict[str, Any]]:
    """(url, httpx2 request keywords) for one call; arguments already checked."""
    path = op.path
    query: list[tuple[str, str]] = []
    # JSON first where an API negotiates (Swagger 2.0 documents often list XML beside it).
    headers: dict[str, str] = {"Accept": "application/json, */*;q=0.8", **config.headers}
    cookies: dict[str, str] = {}
    json_body: dict[str, Any] = {}
    body: Any = None
    has_body = False
    for p in op.params:
        if p.argument not in arguments:
            continue
        value = arguments[p.argument]
        if p.location == "path":
            path = path.replace("{" + p.name + "}", quote(_scalar(value), safe=""))
        elif p.location == "query":
            items = value if isinstance(value, list) else [value]
            if isinstance(value, list) and p.explode is False:
                items = [",".join(_scalar(v) for v in value)]
            query += [(p.name, _scalar(v)) for v in items]
        elif p.location == "header":
            headers[p.name] = _scalar(value)
        elif p.location == "cookie":
            cookies[p.name] = _scalar(value)
        elif p.location in ("json", "form"):
            json_body[p.name] = value
            has_body = True
        else:
            body, has_body = value, True
    if json_body:
        body = json_body
    request: dict[str, Any] = {"params": query, "headers": headers, "cookies": cookies}
    if has_body:
        if op.body_type == "json":
            request["json"] = body
        elif op.body_type == "multipart":
            request["files"] = {k: (None, _scalar(v)) for k, v in (body or {}).items()}
        else:
            request["data"] = {k: _scalar(v) for k, v in (body or {}).items()}
    return config.base_url + path, request


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


class Credentials:
    """Applies the security an operation asks for; fetches and renews OAuth 2 client-credentials
    tokens (one per scheme, shared by every call of this connection)."""

    def __init__(self, config: ApiConfig, http: httpx2.AsyncClient) -> None:
        self.config = config
        self.http = http
        self._tokens: dict[str, tuple[str, float]] = {}
        self._lock = anyio.Lock()

    async def apply(self, op: Operation, request: dict[str, Any], *, renew: bool = False) -> None:
        for requirement in op.security or []:
            names = list(requirement)
            if all(n in self.config.secrets and n in self.config.schemes for n in names):
                for name in names:
                    await self._apply_one(name, requirement[name], request, renew=renew)
                return
        # No requirement we hold every value for: send unauthenticated; the API answers for itself.

    async def _apply_one(
        self, name: str, scopes: list[str], request: dict[str, Any], *, renew: bool
    ) -> None:
        scheme, value = self.config.schemes[name], self.config.secrets[name]
        kind = scheme.get("type")
        if kind == "apiKey":
            where = {"header": "headers", "cookie": "cookies"}.get(scheme.get("in", ""), "")
            if where:
                request[where][str(scheme.get("name"))] = value
            else:
                request["params"].append((str(scheme.get("name")), value))
        elif kind == "http" and str(scheme.get("scheme", "")).lower() == "basic":
            token = base64.b64encode(value.encode()).decode()
            request["headers"]["Authorization"] = f"Basic {token}"
        elif kind == "oauth2" and "clientCredentials" in (scheme.get("flows") or {}):
            token = await self._client_token(name, scheme, value, scopes, renew=renew)
            request["headers"]["Authorization"] = f"Bearer {token}"
        else:  # http bearer, oauth2 with a token already held, openIdConnect
            request["headers"]["Authorization"] = f"Bearer {value}"

    async def _client_token(
        self, name: str, scheme: dict[str, Any], value: str, scopes: list[str], *, renew: bool
    ) -> str:
        async with self._lock:
            held = self._tokens.get(name)
            if held is not None and not renew and held[1] > time.monotonic():
                return held[0]
            flow = scheme["flows"]["clientCredentials"]
            client_id, _, secret = value.partition(":")
            data = {"grant_type": "client_credentials"}
            if scopes:
                data["scope"] = " ".join(scopes)
            url = httpx2.URL(self.config.base_url + "/").join(str(flow.get("tokenUrl", "")))
            response = await self.http.post(url, data=data, auth=(client_id, secret))
            if response.status_code != 200:
                raise ArgumentProblem(
                    f"the token endpoint of {name!r} answered HTTP {response.status_code}: "
                    f"{response.text[:ERROR_EXCERPT]}"
                )
            answer = response.json()
            token = str(answer["access_token"])
            lifetime = float(answer.get("expires_in", 3600))
            # Renewed a margin before it expires (half its life, for a short-lived one).
            renew_in = lifetime - min(_TOKEN_MARGIN, lifetime / 2)
            self._tokens[name] = (token, time.monotonic() + renew_in)
            return token


def result_of(op: Operation, response: httpx2.Response, body: bytes, total: int) -> dict[str, Any]:
    """The tool result of one HTTP response: text (cut with a note), structuredContent for JSON,
    an image for a small image, isError with the status and an excerpt for non-2xx."""
    media = response.headers.get("content-type", "").split(";")[0].strip().lower()
    cut = total > len(body) or len(body) > MAX_TEXT
    if not 200 <= response.status_code < 300:
        excerpt = body[:ERROR_EXCERPT].decode("utf-8", "replace")
        text = f"HTTP {response.status_code} {response.reason_phrase} from {op.method} {op.path}"
        return _text_result(text + (f": {excerpt}" if excerpt else ""), error=True)
    if media.startswith("image/") and not cut:
        data = base64.b64encode(body).decode()
        return {"content": [{"type": "image", "data": data, "mimeType": media}], "isError": False}
    is_json = media == "application/json" or media.endswith("+json")
    text = body.decode(response.encoding or "utf-8", "replace")
    if not is_json and not media.startswith("text/") and media not in ("", "application/xml"):
        return _text_result(f"{len(body):,} bytes of {media} (not shown: binary content)")
    result = _text_result(_cut(text, total))
    if op.output_schema is not None:
        return _structured(op, result, text, total, is_json=is_json, media=media)
    return result


def _structured(
    op: Operation, result: dict[str, Any], text: str, total: int, *, is_json: bool, media: str
) -> dict[str, Any]:
    """A result of a tool with an output schema carries `structuredContent` that fits it — clients
    check it and refuse one that does not — or is an error saying why, with the body."""
    if total > MAX_STRUCTURED:
        problem = f"the response is too large for a structured result ({total:,} bytes)"
    elif not is_json:
        problem = (
            f"the API answered {media or 'no content type'}, not the JSON its document promises"
        )
    else:
        try:
            data = json.loads(text)
        except ValueError as exc:
            data, problem = None, f"the API's JSON does not parse ({exc})"
        else:
            structured = {"result": data} if op.wrapped_output else data
            problem = _schema_problem(op, structured)
            if not problem:
                return {**result, "structuredContent": structured}
    return _text_result(
        f"{op.method} {op.path}: {problem}. The response:\n{_cut(text, total)}", error=True
    )


def _schema_problem(op: Operation, structured: Any) -> str:
    if not isinstance(structured, dict):
        return "the response is not a JSON object"
    validator = op.output_validator
    if validator is None:
        validator = op.output_validator = jsonschema.Draft202012Validator(op.output_schema or {})
    error = jsonschema.exceptions.best_match(validator.iter_errors(structured))
    if error is None:
        return ""
    where = ".".join(str(p) for p in error.absolute_path)
    return f"the response does not match the document's schema{f' at {where}' if where else ''}: {error.message}"


def _cut(text: str, total: int) -> str:
    if len(text) <= MAX_TEXT and total <= len(text.encode()):
        return text
    return (
        text[:MAX_TEXT]
        + f"\n\n[response cut: {total:,} bytes in all, the first {min(len(text), MAX_TEXT):,} characters shown]"
    )


def _text_result(text: str, *, error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


class OpenApiBackend:
    """The MCP server of one spec: tools/list from the document, tools/call as HTTP requests."""

    def __init__(self, spec: ServerSpec, http: httpx2.AsyncClient) -> None:
        self.spec = spec
        self.config = ApiConfig.from_spec(spec)
        self.http = http
        self.credentials = Credentials(self.config, http)
        self._tools = self.config.tools()

    def server(self) -> Server[Any]:
        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(tools=self._tools)

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            raw = await self.call(params.name, params.arguments or {})
            return types.CallToolResult.model_validate(raw, by_name=False)

        return Server(
            self.spec.name,
            version="openapi",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )

    async def call(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        op = self.config.operations.get(name)
        if op is None:
            return _text_result(f"unknown tool {name!r}", error=True)
        try:
            check_arguments(op, arguments)
            response, body, total = await self._send(op, arguments, renew=False)
            if response.status_code == 401 and self._renewable(op):
                response, body, total = await self._send(op, arguments, renew=True)
        except ArgumentProblem as exc:
            return _text_result(str(exc), error=True)
        except httpx2.HTTPError as exc:
            return _text_result(f"{op.method} {op.path} failed: {exc}", error=True)
        return result_of(op, response, body, total)

    def _renewable(self, op: Operation) -> bool:
        return any(
            "clientCredentials" in (self.config.schemes.get(n, {}).get("flows") or {})
            for requirement in op.security or []
            for n in requirement
        )

    async def _send(
        self, op: Operation, arguments: Mapping[str, Any], *, renew: bool
    ) -> tuple[httpx2.Response, bytes, int]:
        url, request = build_request(self.config, op, arguments)
        await self.credentials.apply(op, request, renew=renew)
        async with self.http.stream(op.method, url, **request) as response:
            chunks, total = [], 0
            async for chunk in response.aiter_bytes():
                if total < MAX_BODY:
                    chunks.append(chunk)
                total += len(chunk)
            body = b"".join(chunks)[:MAX_BODY]
        return response, body, total


class DirectCalls:
    """The pool's lean path to this backend (session.Connection.call_tool_raw): a tools/call runs
    the operation at once, without a JSON-RPC round through the in-memory session (which still
    answers the handshake, tools/list and ping)."""

    streams_progress = True  # nothing to stream: progress callers may use it too

    def __init__(self, backend: OpenApiBackend) -> None:
        self.backend = backend

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None, progress: Any, meta: Any
    ) -> dict[str, Any]:
        return await self.backend.call(name, arguments or {})

    async def aclose(self) -> None:
        return None


@asynccontextmanager
async def openapi_transport(
    spec: ServerSpec, child: ChildProcess
) -> AsyncIterator[TransportStreams]:
    timeout = httpx2.Timeout(spec.timeout or 30.0)
    async with httpx2.AsyncClient(
        timeout=timeout,
        limits=_LIMITS,
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        **async_client_kwargs(spec.public_only, limits=_LIMITS),  # type: ignore[arg-type]
    ) as http:
        backend = OpenApiBackend(spec, http)
        server = backend.server()
        child.direct = DirectCalls(backend)
        async with create_client_server_memory_streams() as (client_streams, server_streams):
            async with anyio.create_task_group() as tg:

                async def serve() -> None:
                    await server.run(
                        server_streams[0], server_streams[1], server.create_initialization_options()
                    )

                tg.start_soon(serve)
                try:
                    yield client_streams
                finally:
                    child.direct = None
                    await client_streams[1].aclose()
                    await server_streams[1].aclose()
                    tg.cancel_scope.cancel()
