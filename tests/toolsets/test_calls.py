"""The one way to call a tool as a user (apps/toolsets/calls.py), without a hub: a built-in server
answers its own calls, a backend's JSON-RPC error is raised as ToolError, a pool failure is an
`isError` result, and every outcome, a cancel included, reaches the call log."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import MCPError

from apps.connections.errors import PoolError
from apps.connections.specs import ServerSpec
from apps.toolsets import calls
from apps.toolsets.exposure import EndpointView, Exposed

pytestmark = pytest.mark.anyio

TOOL = Exposed(name="echo_tool", server="echo", backend_name="tool", item_id=7, entry={})


@pytest.fixture
def logged(monkeypatch) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    monkeypatch.setattr(
        calls.calllog,
        "record",
        lambda user, endpoint, exposed, started, clock, **outcome: rows.append(
            {"user": user, "endpoint": endpoint, "name": exposed.name, **outcome}
        ),
    )
    return rows


def view_with_spec() -> EndpointView:
    view = EndpointView(endpoint_id=1, owner_id=2, slug="alice", version=1)
    view.specs["echo"] = ServerSpec(name="echo", transport="stdio", command="echo")
    return view


class FakePool:
    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome
        self.called = asyncio.Event()

    async def call_tool(self, spec: ServerSpec, name: str, arguments: Any, **options: Any) -> Any:
        self.called.set()
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        if self.outcome == "hang":
            await asyncio.Event().wait()
        return self.outcome


async def call(view: EndpointView) -> dict[str, Any]:
    return await calls.call_tool(
        user_id=3, endpoint_id=1, view=view, exposed=TOOL, arguments={"text": "hi"}
    )


async def test_a_builtin_server_answers_as_the_caller_and_the_pool_is_never_asked(
    monkeypatch, logged
):
    seen: list[calls.BuiltinCall] = []

    async def answer(call: calls.BuiltinCall) -> dict[str, Any]:
        seen.append(call)
        return {"content": [{"type": "text", "text": "built in"}], "isError": False}

    monkeypatch.setitem(calls._builtins, "echo", answer)
    monkeypatch.setattr(calls, "get_pool", lambda: pytest.fail("the pool was asked"))
    view = EndpointView(endpoint_id=1, owner_id=2, slug="alice", version=1)  # no spec at all

    result = await call(view)

    assert result["content"][0]["text"] == "built in"
    assert seen == [calls.BuiltinCall(3, 1, "tool", {"text": "hi"}, None)]
    assert logged == [
        {
            "user": 3,
            "endpoint": 1,
            "name": "echo_tool",
            "ok": True,
            "error": "",
            "arguments": {"text": "hi"},
        }
    ]


async def test_a_backend_error_is_raised_typed_and_logged(monkeypatch, logged):
    monkeypatch.setattr(calls, "get_pool", lambda: FakePool(MCPError(-32602, "bad text")))

    with pytest.raises(calls.ToolError) as failure:
        await call(view_with_spec())

    assert (failure.value.code, failure.value.message) == (-32602, "bad text")
    assert [(row["ok"], row["error"]) for row in logged] == [(False, "bad text")]


async def test_a_pool_failure_is_an_error_result(monkeypatch, logged):
    monkeypatch.setattr(calls, "get_pool", lambda: FakePool(PoolError("echo", "echo is down")))

    result = await call(view_with_spec())

    assert result == calls.error_result("Tool echo_tool failed: echo is down")
    assert [(row["ok"], row["error"]) for row in logged] == [
        (False, "Tool echo_tool failed: echo is down")
    ]


async def test_a_cancelled_call_is_logged_as_cancelled(monkeypatch, logged):
    pool = FakePool("hang")
    monkeypatch.setattr(calls, "get_pool", lambda: pool)
    task = asyncio.ensure_future(call(view_with_spec()))
    await pool.called.wait()

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert [(row["ok"], row["error"]) for row in logged] == [(False, "Cancelled by the user")]
