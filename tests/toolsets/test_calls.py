"""The one way to call a tool as a user (apps/toolsets/calls.py), without a hub: a built-in server
answers its own calls, a backend's JSON-RPC error is raised as ToolError, a pool failure is an
`isError` result, and every outcome, a cancel included, reaches the call log."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import MCPError

from apps.connections.errors import PoolError, WorkerLost
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


class LosesItsWorkerOnce:
    """The pool worker running the first call is lost; the next call is answered."""

    def __init__(self) -> None:
        self.calls = 0

    async def call_tool(self, spec: ServerSpec, name: str, arguments: Any, **options: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            raise WorkerLost("echo", "pool worker w1 stopped while running the call")
        return {"content": [{"type": "text", "text": "answered"}], "isError": False}


READ_ONLY = Exposed(
    name="echo_tool",
    server="echo",
    backend_name="tool",
    item_id=7,
    entry={"annotations": {"readOnlyHint": True}},
)


@pytest.mark.parametrize(
    ("exposed", "patience", "sent", "answered"),
    [
        (READ_ONLY, 30.0, 2, True),  # a run or a chat turn: sent again, changes nothing
        (TOOL, 30.0, 1, False),  # may change data: may have run, never repeated unasked
        (READ_ONLY, 0.0, 1, False),  # an MCP client hears at once, and decides
    ],
)
async def test_a_read_only_call_whose_worker_was_lost_is_sent_again_for_callers_that_wait(
    monkeypatch, logged, exposed, patience, sent, answered
):
    pool = LosesItsWorkerOnce()
    monkeypatch.setattr(calls, "get_pool", lambda: pool)

    result = await calls.call_tool(
        user_id=3,
        endpoint_id=1,
        view=view_with_spec(),
        exposed=exposed,
        arguments={},
        hub_patience=patience,
    )

    assert pool.calls == sent
    assert (result["content"][0]["text"] == "answered") is answered
    assert result.get("isError") is (not answered)
    assert len(logged) == 1  # one call in the log, however many times it was sent
