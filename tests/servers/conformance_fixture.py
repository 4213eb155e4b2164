"""MCP server with the fixtures the official conformance suite's server scenarios expect.

    python tests/servers/conformance_fixture.py                    # stdio (how the hub runs it)
    python tests/servers/conformance_fixture.py --http PORT        # Streamable HTTP at /mcp
    python tests/servers/conformance_fixture.py --sse PORT         # legacy SSE at /sse + /messages/
    python tests/servers/conformance_fixture.py --http PORT --bearer T   # ... and 401 without the token

Names, contents and behaviour follow the scenario sources of `@modelcontextprotocol/conformance`
0.1.16 (`node_modules/@modelcontextprotocol/conformance/dist/index.js`), one entry per scenario:

- tools: test_simple_text, test_image_content, test_audio_content, test_embedded_resource,
  test_multiple_content_types, test_tool_with_logging (3 info logs ~50 ms apart),
  test_tool_with_progress (0/50/100 of 100), test_error_handling (isError result),
  test_sampling (sampling/createMessage), test_elicitation, test_elicitation_sep1034_defaults,
  test_elicitation_sep1330_enums (elicitation/create), json_schema_2020_12_tool (2020-12 keywords),
  test_reconnection (closes its SSE stream mid-call when the transport allows it; SEP-1699);
- resources: test://static-text, test://static-binary, test://watched-resource
  (resources/subscribe and unsubscribe), template test://template/{id}/data;
- prompts: test_simple_prompt, test_prompt_with_arguments, test_prompt_with_embedded_resource,
  test_prompt_with_image; completion/complete; logging/setLevel (filters later log messages).

Built on the SDK's low-level `Server` so every wire detail (schemas kept verbatim, the exact
elicitation schemas, per-request log/progress routing) is ours. Over HTTP it keeps an in-memory
event store, so SSE streams are resumable with Last-Event-ID and carry a priming event and a
`retry` field; the SDK's DNS-rebinding protection is on when bound to a loopback host.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import os
import sys
import warnings
from collections import deque
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata

# Logging, sampling and roots are deprecated as of 2026-07-28, but the 2025 scenarios test them.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

log = logging.getLogger("conformance_fixture")

# A 1x1 red PNG and a minimal (silent) WAV file.
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV_SILENT = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA=="

LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]

NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}


def _tool(name: str, description: str, input_schema: dict[str, Any] | None = None) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema=input_schema or NO_ARGS)


TOOLS = [
    _tool("test_simple_text", "Returns simple text content."),
    _tool("test_image_content", "Returns a PNG image (1x1 red pixel)."),
    _tool("test_audio_content", "Returns a WAV audio clip."),
    _tool("test_embedded_resource", "Returns an embedded text resource."),
    _tool("test_multiple_content_types", "Returns text, image and resource content together."),
    _tool("test_tool_with_logging", "Sends three info log notifications while it runs."),
    _tool(
        "test_tool_with_progress",
        "Reports progress 0, 50 and 100 of 100 when given a progressToken.",
    ),
    _tool("test_error_handling", "Always fails with a tool error (isError: true)."),
    _tool(
        "test_sampling",
        "Asks the client's model (sampling/createMessage) and returns its answer.",
        {
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "The prompt to send to the LLM"}
            },
            "required": ["prompt"],
        },
    ),
    _tool(
        "test_elicitation",
        "Asks the user for a username and email (elicitation/create).",
        {
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "The message to show the user"}
            },
            "required": ["message"],
        },
    ),
    _tool(
        "test_elicitation_sep1034_defaults",
        "Elicitation whose schema has defaults for every primitive type.",
    ),
    _tool("test_elicitation_sep1330_enums", "Elicitation whose schema has all five enum variants."),
    _tool(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    ),
    _tool(
        "test_reconnection",
        "Closes its SSE response stream mid-call, then answers after the client resumes.",
    ),
]

ELICIT_USER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}

ELICIT_SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}

ELICIT_SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Untitled single-select",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Titled single-select",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Legacy titled enum (deprecated enumNames)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Untitled multi-select",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Titled multi-select",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}

STATIC_TEXT = "This is the content of the static text resource."
RESOURCES = [
    types.Resource(
        uri="test://static-text",
        name="static-text",
        description="A static text resource.",
        mime_type="text/plain",
    ),
    types.Resource(
        uri="test://static-binary",
        name="static-binary",
        description="A static PNG image.",
        mime_type="image/png",
    ),
    types.Resource(
        uri="test://watched-resource",
        name="watched-resource",
        description="A resource that can be subscribed to.",
        mime_type="text/plain",
    ),
]
TEMPLATES = [
    types.ResourceTemplate(
        uri_template="test://template/{id}/data",
        name="template-data",
        description="JSON data for the given id.",
        mime_type="application/json",
    )
]

PROMPTS = [
    types.Prompt(name="test_simple_prompt", description="A simple prompt without arguments."),
    types.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with two required arguments.",
        arguments=[
            types.PromptArgument(name="arg1", description="First test argument", required=True),
            types.PromptArgument(name="arg2", description="Second test argument", required=True),
        ],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt that embeds a resource.",
        arguments=[
            types.PromptArgument(
                name="resourceUri", description="URI of the resource to embed", required=True
            )
        ],
    ),
    types.Prompt(name="test_prompt_with_image", description="A prompt with image content."),
]

# Completion suggestions per prompt argument / template variable.
COMPLETIONS = {
    "arg1": ["paris", "park", "party", "test", "testValue1"],
    "arg2": ["world", "testValue2"],
    "resourceUri": ["test://static-text", "test://static-binary", "test://watched-resource"],
    "id": ["1", "2", "3", "123"],
}


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _image() -> types.ImageContent:
    return types.ImageContent(type="image", data=PNG_1X1, mime_type="image/png")


def _result(*content: Any, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), is_error=is_error)


def _conn_state(ctx: Any) -> dict[str, Any]:
    """Per-connection scratch state (log level, subscriptions).

    The handler context exposes the connection only through the session's private attribute in
    SDK 2.3; fall back to one shared dict if that ever moves.
    """
    connection = getattr(ctx.session, "_connection", None)
    return connection.state if connection is not None else _SHARED_STATE


_SHARED_STATE: dict[str, Any] = {}


async def _log(ctx: Any, level: str, message: str) -> None:
    """Send a log notification on this request's stream, honouring logging/setLevel."""
    minimum = _conn_state(ctx).get("log_level", "debug")
    if LOG_LEVELS.index(level) < LOG_LEVELS.index(minimum):
        return
    await ctx.session.send_log_message(
        level, message, logger="conformance", related_request_id=ctx.request_id
    )


def _has_capability(ctx: Any, **capability: Any) -> bool:
    return ctx.session.check_client_capability(types.ClientCapabilities(**capability))


async def _ask(
    ctx: Any, params: types.CallToolRequestParams, request: Any, result_type: type[Any]
) -> Any:
    """Send a server-to-client request (sampling, elicitation) and return the client's answer.

    Handshake eras (2025-*) carry it on this call's own stream, as a related request. The stateless
    2026-07-28 era has no back-channel: answer with an InputRequiredResult and read the client's
    answer from the retried call's `inputResponses`.
    """
    if ctx.session.can_send_request:
        metadata = ServerMessageMetadata(related_request_id=ctx.request_id)
        return await ctx.session.send_request(request, result_type, metadata=metadata)
    answer = (params.input_responses or {}).get("input")
    if answer is None:
        return types.InputRequiredResult(input_requests={"input": request})
    return result_type.model_validate(
        answer.model_dump(by_alias=True, mode="json", exclude_none=True)
    )


async def _elicit(
    ctx: Any, params: types.CallToolRequestParams, message: str, schema: dict[str, Any]
) -> types.CallToolResult | types.InputRequiredResult:
    if not _has_capability(ctx, elicitation=types.ElicitationCapability()):
        return _result(_text("The client does not support elicitation."), is_error=True)
    request = types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
    )
    answer = await _ask(ctx, params, request, types.ElicitResult)
    if isinstance(answer, types.InputRequiredResult):
        return answer
    content = json.dumps(answer.content or {}, sort_keys=True)
    return _result(_text(f"Elicitation completed: action={answer.action}, content={content}"))


# --- handlers ---------------------------------------------------------------------------------


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(
    ctx: Any, params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    name, args = params.name, params.arguments or {}
    if name == "test_simple_text":
        return _result(_text("This is a simple text response for testing."))
    if name == "test_image_content":
        return _result(_image())
    if name == "test_audio_content":
        return _result(types.AudioContent(type="audio", data=WAV_SILENT, mime_type="audio/wav"))
    if name == "test_embedded_resource":
        resource = types.TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )
        return _result(types.EmbeddedResource(type="resource", resource=resource))
    if name == "test_multiple_content_types":
        resource = types.TextResourceContents(
            uri="test://mixed-content-resource",
            mime_type="application/json",
            text='{"test":"data","value":123}',
        )
        return _result(
            _text("Multiple content types test:"),
            _image(),
            types.EmbeddedResource(type="resource", resource=resource),
        )
    if name == "test_tool_with_logging":
        await _log(ctx, "info", "Tool execution started")
        await asyncio.sleep(0.05)
        await _log(ctx, "info", "Tool processing data")
        await asyncio.sleep(0.05)
        await _log(ctx, "info", "Tool execution completed")
        return _result(_text("Tool with logging executed successfully"))
    if name == "test_tool_with_progress":
        for step in (0, 50, 100):
            if step:
                await asyncio.sleep(0.05)
            await ctx.session.report_progress(step, 100, f"Completed step {step} of 100")
        return _result(_text("Tool with progress executed successfully"))
    if name == "test_error_handling":
        return _result(_text("This tool intentionally returns an error for testing"), is_error=True)
    if name == "test_sampling":
        if not _has_capability(ctx, sampling=types.SamplingCapability()):
            return _result(_text("The client does not support sampling."), is_error=True)
        prompt = _text(str(args.get("prompt", "")))
        request = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(
                messages=[types.SamplingMessage(role="user", content=prompt)], max_tokens=100
            )
        )
        reply = await _ask(ctx, params, request, types.CreateMessageResult)
        if isinstance(reply, types.InputRequiredResult):
            return reply
        text = (
            reply.content.text
            if isinstance(reply.content, types.TextContent)
            else str(reply.content)
        )
        return _result(_text(f"LLM response: {text}"))
    if name == "test_elicitation":
        message = str(args.get("message", "Please provide your information"))
        return await _elicit(ctx, params, message, ELICIT_USER_SCHEMA)
    if name == "test_elicitation_sep1034_defaults":
        message = "Test client default value handling - please accept with defaults"
        return await _elicit(ctx, params, message, ELICIT_SEP1034_SCHEMA)
    if name == "test_elicitation_sep1330_enums":
        message = "Please select values using different enum schema types"
        return await _elicit(ctx, params, message, ELICIT_SEP1330_SCHEMA)
    if name == "json_schema_2020_12_tool":
        return _result(_text(f"Received: {json.dumps(args, sort_keys=True)}"))
    if name == "test_reconnection":
        # Only offered by the SDK over HTTP with an event store, for requests sent as 2025-11-25+.
        if ctx.close_sse_stream is not None:
            # The SDK hands the priming event to the response task and closes the stream when
            # told: closed at once, the event can be dropped before it is written (seen on a
            # loaded machine). Mid-call means after it: a client can only resume from an id.
            await asyncio.sleep(0.1)
            await ctx.close_sse_stream()
            await asyncio.sleep(0.2)  # the client reconnects with Last-Event-ID meanwhile
        return _result(_text("Reconnection test completed successfully"))
    raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")


async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=RESOURCES)


async def list_resource_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)


async def read_resource(
    ctx: Any, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    uri = str(params.uri)
    if uri == "test://static-text":
        contents: list[Any] = [
            types.TextResourceContents(uri=uri, mime_type="text/plain", text=STATIC_TEXT)
        ]
    elif uri == "test://static-binary":
        contents = [types.BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG_1X1)]
    elif uri == "test://watched-resource":
        contents = [
            types.TextResourceContents(
                uri=uri, mime_type="text/plain", text="Watched resource content"
            )
        ]
    elif uri.startswith("test://template/") and uri.endswith("/data") and uri.count("/") == 4:
        item = uri[len("test://template/") : -len("/data")]
        body = json.dumps(
            {"id": item, "templateTest": True, "data": f"Data for ID: {item}"},
            separators=(",", ":"),
        )
        contents = [types.TextResourceContents(uri=uri, mime_type="application/json", text=body)]
    else:
        raise MCPError(code=-32002, message=f"Resource not found: {uri}", data={"uri": uri})
    return types.ReadResourceResult(contents=contents)


async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    _conn_state(ctx).setdefault("subscriptions", set()).add(str(params.uri))
    return types.EmptyResult()


async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    _conn_state(ctx).setdefault("subscriptions", set()).discard(str(params.uri))
    return types.EmptyResult()


async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=PROMPTS)


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    args = params.arguments or {}

    def user(content: Any) -> types.PromptMessage:
        return types.PromptMessage(role="user", content=content)

    if params.name == "test_simple_prompt":
        messages = [user(_text("This is a simple prompt for testing."))]
    elif params.name == "test_prompt_with_arguments":
        missing = [a for a in ("arg1", "arg2") if a not in args]
        if missing:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Missing required arguments: {', '.join(missing)}",
            )
        messages = [
            user(_text(f"Prompt with arguments: arg1='{args['arg1']}', arg2='{args['arg2']}'"))
        ]
    elif params.name == "test_prompt_with_embedded_resource":
        if "resourceUri" not in args:
            raise MCPError(
                code=types.INVALID_PARAMS, message="Missing required argument: resourceUri"
            )
        resource = types.TextResourceContents(
            uri=args["resourceUri"],
            mime_type="text/plain",
            text="Embedded resource content for testing.",
        )
        messages = [
            user(types.EmbeddedResource(type="resource", resource=resource)),
            user(_text("Please process the embedded resource above.")),
        ]
    elif params.name == "test_prompt_with_image":
        messages = [user(_image()), user(_text("Please analyze the image above."))]
    else:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
    return types.GetPromptResult(description=params.name, messages=messages)


async def complete(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
    prefix = params.argument.value or ""
    values = [v for v in COMPLETIONS.get(params.argument.name, []) if v.startswith(prefix)]
    return types.CompleteResult(
        completion=types.Completion(values=values, total=len(values), has_more=False)
    )


async def set_logging_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    _conn_state(ctx)["log_level"] = params.level
    return types.EmptyResult()


def build_server() -> Server:
    return Server(
        "mcp-conformance-fixture",
        version="1.0.0",
        instructions="Fixture for the MCP conformance suite's server scenarios.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
        on_set_logging_level=set_logging_level,
    )


# --- transports -------------------------------------------------------------------------------


class MemoryEventStore(EventStore):
    """Keeps the last `limit` SSE events so a client can resume a stream with Last-Event-ID."""

    def __init__(self, limit: int = 10_000) -> None:
        self._events: deque[tuple[str, str, Any]] = deque(maxlen=limit)
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: str, message: Any) -> str:
        event_id = str(next(self._ids))
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        stream = next((s for e, s, _ in self._events if e == last_event_id), None)
        if stream is None:
            return None
        for event_id, stream_id, message in list(self._events):
            if stream_id == stream and int(event_id) > int(last_event_id) and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream


async def run_stdio(server: Server) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def require_bearer(app: Any, token: str) -> Any:
    """ASGI wrapper answering 401 unless the request carries `Authorization: Bearer <token>`."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"www-authenticate", b"Bearer"), (b"content-type", b"text/plain")],
                }
            )
            await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
            return
        await app(scope, receive, send)

    return guarded


def http_app(server: Server, host: str = "127.0.0.1", token: str | None = None) -> Any:
    """The Streamable HTTP ASGI app (endpoint /mcp); its lifespan runs the SDK's session manager."""
    app = server.streamable_http_app(
        streamable_http_path="/mcp", event_store=MemoryEventStore(), retry_interval=1000, host=host
    )
    return require_bearer(app, token) if token else app


def run_http(server: Server, host: str, port: int, token: str | None = None) -> None:
    import uvicorn

    app = http_app(server, host, token)
    print(f"conformance fixture: http://{host}:{port}/mcp", file=sys.stderr, flush=True)
    # h11, not httptools (installed for the hub): under httptools the SDK's early close of an SSE
    # stream (test_reconnection) drops the priming event it has just written.
    uvicorn.run(app, host=host, port=port, log_level="warning", http="h11")


def run_sse(server: Server, host: str, port: int) -> None:
    import uvicorn
    from mcp.server.sse import SseServerTransport
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Mount, Route

    security = None
    if host in (
        "127.0.0.1",
        "localhost",
        "::1",
    ):  # the same DNS-rebinding guard the SDK's own sse_app sets
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    sse = SseServerTransport("/messages/", security_settings=security)

    async def handle_sse(request: Any) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as (
            read_stream,
            write_stream,
        ):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        return Response()

    app = Starlette(
        routes=[Route("/sse", handle_sse), Mount("/messages/", app=sse.handle_post_message)]
    )
    print(f"conformance fixture: http://{host}:{port}/sse", file=sys.stderr, flush=True)
    # h11, not httptools (installed for the hub): under httptools the SDK's early close of an SSE
    # stream (test_reconnection) drops the priming event it has just written.
    uvicorn.run(app, host=host, port=port, log_level="warning", http="h11")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--http", type=int, metavar="PORT", help="serve Streamable HTTP at http://HOST:PORT/mcp"
    )
    mode.add_argument(
        "--sse", type=int, metavar="PORT", help="serve legacy SSE at http://HOST:PORT/sse"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="bind address for --http/--sse (default 127.0.0.1)"
    )
    parser.add_argument(
        "--bearer",
        metavar="TOKEN",
        default=os.environ.get("CONFORMANCE_FIXTURE_TOKEN"),
        help="with --http, answer 401 unless `Authorization: Bearer TOKEN` is sent (to test auth-adding clients)",
    )
    options = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    server = build_server()
    if options.http is not None:
        run_http(server, options.host, options.http, options.bearer)
    elif options.sse is not None:
        run_sse(server, options.host, options.sse)
    else:
        asyncio.run(run_stdio(server))


if __name__ == "__main__":
    main()
