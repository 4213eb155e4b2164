"""The conformance fixture answers as the conformance suite's server scenarios expect.

Checked with the SDK's own client: over stdio (how the hub runs it), in-process on the stateless
2026-07-28 era (sampling and elicitation through InputRequiredResult), and over Streamable HTTP for
the one behaviour the suite does not exercise as written: test_reconnection closing its SSE stream
mid-call and the result arriving on a GET resumed with Last-Event-ID (SEP-1699).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
import uvicorn
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.servers import conformance_fixture
from tests.waiting import eventually

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.timeout(60),
    # logging/setLevel, sampling and resources/subscribe are deprecated in 2026-07-28; the 2025 eras test them.
    pytest.mark.filterwarnings(
        f"ignore::{MCPDeprecationWarning.__module__}.{MCPDeprecationWarning.__name__}"
    ),
]

FIXTURE = Path(conformance_fixture.__file__)

EXPECTED_TOOLS = {
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_error_handling",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool",
    "test_reconnection",
}
EXPECTED_PROMPTS = {
    "test_simple_prompt",
    "test_prompt_with_arguments",
    "test_prompt_with_embedded_resource",
    "test_prompt_with_image",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def answer_sampling(
    context, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult:
    asked = params.messages[0].content.text
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=f"echo {asked}"),
        model="scripted",
    )


async def answer_elicitation(context, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(
        action="accept", content={"username": "alice", "email": "alice@example.com"}
    )


async def test_stdio_tools_resources_prompts() -> None:
    logs: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    server = StdioServerParameters(command=sys.executable, args=[str(FIXTURE)])
    async with Client(
        server,
        mode="legacy",
        cache=None,
        sampling_callback=answer_sampling,
        elicitation_callback=answer_elicitation,
        logging_callback=on_log,
    ) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == EXPECTED_TOOLS
        schema = tools["json_schema_2020_12_tool"].input_schema
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert "address" in schema["$defs"] and schema["additionalProperties"] is False

        simple = await client.call_tool("test_simple_text")
        assert simple.content[0].text == "This is a simple text response for testing."
        mixed = await client.call_tool("test_multiple_content_types")
        assert [c.type for c in mixed.content] == ["text", "image", "resource"]
        audio = await client.call_tool("test_audio_content")
        assert audio.content[0].mime_type == "audio/wav"
        failed = await client.call_tool("test_error_handling")
        assert failed.is_error is True and failed.content[0].text

        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        await client.call_tool("test_tool_with_progress", progress_callback=on_progress)
        assert progress == [0, 50, 100]

        await client.set_logging_level("debug")
        await client.call_tool("test_tool_with_logging")
        assert [entry.data for entry in logs] == [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ]
        await client.set_logging_level("warning")  # info entries are now filtered out
        await client.call_tool("test_tool_with_logging")
        assert len(logs) == 3

        sampled = await client.call_tool("test_sampling", {"prompt": "hello"})
        assert sampled.content[0].text == "LLM response: echo hello"
        elicited = await client.call_tool("test_elicitation", {"message": "who are you?"})
        assert (
            "action=accept" in elicited.content[0].text
            and "alice@example.com" in elicited.content[0].text
        )

        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        assert {"test://static-text", "test://static-binary", "test://watched-resource"} <= uris
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["test://template/{id}/data"]
        text = await client.read_resource("test://static-text")
        assert text.contents[0].text == "This is the content of the static text resource."
        binary = await client.read_resource("test://static-binary")
        assert binary.contents[0].mime_type == "image/png" and binary.contents[0].blob
        templated = await client.read_resource("test://template/123/data")
        assert json.loads(templated.contents[0].text) == {
            "id": "123",
            "templateTest": True,
            "data": "Data for ID: 123",
        }

        assert {p.name for p in (await client.list_prompts()).prompts} == EXPECTED_PROMPTS
        prompt = await client.get_prompt(
            "test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"}
        )
        assert (
            prompt.messages[0].content.text == "Prompt with arguments: arg1='hello', arg2='world'"
        )
        image_prompt = await client.get_prompt("test_prompt_with_image")
        assert image_prompt.messages[0].content.type == "image"

        ref = types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
        completion = await client.complete(ref, {"name": "arg1", "value": "par"})
        assert completion.completion.values == ["paris", "park", "party"]


async def test_modern_era_sampling_and_elicitation_use_input_required() -> None:
    async with Client(
        conformance_fixture.build_server(),
        cache=None,
        sampling_callback=answer_sampling,
        elicitation_callback=answer_elicitation,
    ) as client:
        sampled = await client.call_tool("test_sampling", {"prompt": "modern"})
        assert sampled.content[0].text == "LLM response: echo modern"
        elicited = await client.call_tool("test_elicitation_sep1330_enums")
        assert elicited.content[0].text.startswith("Elicitation completed: action=accept")


@pytest.fixture
def http_fixture():
    """The fixture's Streamable HTTP app under uvicorn in a thread (no second interpreter to start)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    app = conformance_fixture.http_app(conformance_fixture.build_server())
    # h11, as conformance_fixture.py runs it for the suite (why: there).
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", http="h11")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    eventually(lambda: server.started or not thread.is_alive(), interval=0.01)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://localhost:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


async def sse_events(response: httpx2.Response) -> list[dict[str, str]]:
    """Read an SSE response to its end: one dict per event (id, data, retry, event)."""
    events, current = [], {}
    async for line in response.aiter_lines():
        if not line:
            if current:
                events.append(current)
            current = {}
            continue
        field, _, value = line.partition(":")
        current[field] = value[1:] if value.startswith(" ") else value
    if current:
        events.append(current)
    return events


async def test_http_reconnection_resumes_with_last_event_id(http_fixture: str) -> None:
    json_sse = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=10) as http:
        client_info = {"name": "t", "version": "1"}
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client_info}
        initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
        response = await http.post(http_fixture, json=initialize, headers=json_sse)
        session = {
            "mcp-session-id": response.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post(http_fixture, json=initialized, headers=json_sse | session)

        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "test_reconnection"},
        }
        async with http.stream(
            "POST", http_fixture, json=call, headers=json_sse | session
        ) as response:
            closed_early = await sse_events(response)
        # The stream ends after the priming event (an id, empty data, a retry hint), before any result.
        assert [e.get("data") for e in closed_early] == [""]
        assert closed_early[0]["retry"] == "1000"

        resume = session | {"accept": "text/event-stream", "last-event-id": closed_early[0]["id"]}
        with anyio.fail_after(5):
            async with http.stream("GET", http_fixture, headers=resume) as response:
                assert response.status_code == 200
                async for line in response.aiter_lines():
                    if line.startswith("data: {"):
                        message = json.loads(line[len("data: ") :])
                        break
        assert message["id"] == 1
        assert message["result"]["content"][0]["text"] == "Reconnection test completed successfully"
