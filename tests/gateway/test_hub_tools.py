"""An MCP client (the `mcp` SDK) hands alice's task to the hub's own tools through her endpoint."""

from __future__ import annotations

import asyncio

import pytest

from apps.chat.runs.models import Run
from tests.chat.conftest import (  # noqa: F401 - fixtures
    alice_provider,
    charlie_hub_token,
    db,
    llm,
)
from tests.chat.runs.conftest import hub_tools  # noqa: F401 - the fixture
from tests.live_hub import mcp_client
from tests.llm_server import Reply
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def _three_adds(llm) -> None:
    llm.script(
        [
            Reply(tool_calls=[("c1", "add", {"a": 1, "b": 2})]),
            Reply(tool_calls=[("c2", "add", {"a": 3, "b": 3})]),
            Reply(tool_calls=[("c3", "echo", {"text": "done"})]),
            Reply(text=["The sums are 3 and 6"]),
        ]
    )


async def test_autonomous_with_mcp_reports_progress_and_answers(
    hub, llm, alice_provider, alice_endpoint, hub_tools, alice_hub_token
):
    _three_adds(llm)
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        available = await client.call_tool("list_available_mcps", {})
        result = await client.call_tool(
            "autonomous_with_mcp",
            {"mcp_name": "echo", "task": "Add 1+2 and 3+3", "max_rounds": 20},
            progress_callback=on_progress,
        )

    assert {"autonomous_with_mcp", "get_run", "list_available_mcps"} <= listed
    assert available.structured_content["servers"][0]["name"] == "echo"
    assert "hub" not in available.content[0].text
    assert result.is_error is False
    assert result.content[0].text == "The sums are 3 and 6"
    assert (
        result.structured_content["rounds"] == 4
        and result.structured_content["status"] == "succeeded"
    )
    assert [u[0] for u in updates] == sorted({u[0] for u in updates}) and updates[-1][0] == 4
    assert updates[-1][1] == 20
    run = await db(lambda: Run.objects.get(pk=result.structured_content["run_id"]))()
    assert run.owner_id == alice_endpoint.owner_id and run.servers == ["echo"]
    # The run's model was offered echo's tools, never the hub's own.
    offered = {t["function"]["name"] for t in llm.requests[0]["tools"]}
    assert "add" in offered and not offered & {"autonomous_with_mcp", "get_run"}


async def test_a_run_that_ended_before_its_caller_looked_still_reports_its_rounds(alice):
    """A quick run can end before the waiting call first reads it (and its events are best effort):
    the caller is still told the rounds it took before the answer."""
    from apps.gateway.hub_tools import _follow

    run = await db(
        lambda: Run.objects.create(
            owner=alice,
            task="quick",
            status=Run.Status.SUCCEEDED,
            rounds=2,
            max_rounds=20,
            answer="done quickly",
        )
    )()
    updates: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total))

    result = await _follow(run, on_progress)

    assert updates == [(2.0, 20.0)]
    assert (
        result["content"][0]["text"] == "done quickly"
        and result["structuredContent"]["rounds"] == 2
    )


async def test_wait_false_returns_the_run_id_and_get_run_follows_it(
    hub, llm, alice_provider, alice_endpoint, hub_tools, alice_hub_token, charlie_hub_token
):
    _three_adds(llm)
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        started = await client.call_tool(
            "autonomous_discover_and_execute", {"task": "Add things", "wait": False}
        )
        run_id = started.structured_content["run_id"]

        async def succeeded():
            got = await client.call_tool("get_run", {"run_id": run_id})
            return got if got.structured_content["status"] == "succeeded" else None

        got = await eventually_async(succeeded, timeout=20, interval=0.1)
        bad = await client.call_tool("autonomous_with_mcp", {"mcp_name": "nope", "task": "x"})

    assert started.structured_content["status"] in ("queued", "running")
    assert got.content[0].text == "The sums are 3 and 6"
    assert bad.is_error is True and "nope" in bad.content[0].text
    # charlie's hub tools (on his own endpoint) know nothing of alice's run.
    charlie_endpoint = await db(
        lambda: alice_endpoint.__class__.objects.get(owner__username="charlie")
    )()
    from apps.gateway.hub_tools import ensure_hub_server
    from apps.toolsets.services import enable_tools

    server = await db(ensure_hub_server)()
    await db(
        lambda: enable_tools(
            endpoint=charlie_endpoint, tools=server.tools.all(), enforce_budget=False
        )
    )()
    async with mcp_client(hub.url(charlie_endpoint.path), charlie_hub_token) as client:
        peek = await client.call_tool("get_run", {"run_id": run_id})
        cancel = await client.call_tool("cancel_run", {"run_id": run_id})
    assert peek.is_error and cancel.is_error
    assert "The sums" not in peek.content[0].text


async def test_a_client_that_cancels_the_call_cancels_the_run(
    hub, llm, alice_provider, alice_endpoint, hub_tools, alice_hub_token
):
    def forever(body: dict) -> Reply:
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        return Reply(tool_calls=[(f"c{done}", "echo", {"text": "again"})], delay=0.2)

    llm.responder = forever
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        call = asyncio.ensure_future(
            client.call_tool("autonomous_with_mcp", {"mcp_name": "echo", "task": "Never stop"})
        )
        await eventually_async(
            db(Run.objects.filter(status="running", rounds__gte=2).exists), timeout=10
        )
        call.cancel()
        await eventually_async(db(Run.objects.filter(status="cancelled").exists), timeout=10)
        run = await db(Run.objects.get)()
    assert run.status == "cancelled"
    assert run.rounds >= 2
