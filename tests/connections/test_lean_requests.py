"""The lean request path (transports/lean_http.py, lean_stdio.py), against real SDK servers.

A raw tools/call (what the gateway makes) goes out as one POST on the session the SDK
opened, or one line to a stdio child; these check it behaves as the SDK path did: JSON
and SSE answers, progress and log lines relayed, cancellation reaching the backend,
JSON-RPC error codes kept, a restarted backend's 404 handled, a crashed child reported,
an idle keep-alive connection closed by the server.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from mcp.shared.exceptions import MCPError

from apps.connections.errors import CallTimeout, ServerCrashed
from apps.connections.hooks import Relay
from apps.connections.pool import Pool, PoolOptions
from apps.connections.specs import ServerSpec
from apps.connections.transports.lean_http import LeanHttp
from apps.connections.transports.lean_stdio import LeanStdio
from tests.connections.conftest import sdk_spec
from tests.connections.test_http_transports import _serve
from tests.live_hub import HttpBackend
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture(scope="module", params=["http", "http-json"])
def backend(request):
    """The echo server answering plain requests with an SSE stream (the SDK's default) or a JSON body."""
    proc, port = _serve(request.param)
    yield request.param, f"http://127.0.0.1:{port}/mcp"
    proc.kill()
    proc.wait()


@pytest.fixture(params=["stdio", "http"])
def any_spec(request, backend):
    """The echo server as a stdio child, or over Streamable HTTP (SSE or JSON answers)."""
    if request.param == "stdio":
        if backend[0] != "http":
            pytest.skip("one stdio run is enough")
        return sdk_spec("remote")
    return ServerSpec("remote", transport="streamable_http", url=backend[1])


def _lean(pool: Pool, name: str):
    conn = pool._servers[name].conn
    assert conn is not None
    return conn.lean


async def test_calls_take_the_lean_path_and_answer_like_the_sdk_path(any_spec):
    spec = any_spec
    async with Pool() as lean_pool, Pool(PoolOptions(lean_requests=False)) as sdk_pool:
        lean = await lean_pool.call_tool(spec, "add", {"a": 2, "b": 3}, raw=True)
        sdk = await sdk_pool.call_tool(spec, "add", {"a": 2, "b": 3}, raw=True)
        kind = LeanStdio if spec.transport == "stdio" else LeanHttp
        assert isinstance(_lean(lean_pool, "remote"), kind) and _lean(sdk_pool, "remote") is None
        assert (
            lean
            == sdk
            == {
                "content": [{"type": "text", "text": "5"}],
                "structuredContent": {"result": 5},
                "isError": False,
            }
        )
        missing = await lean_pool.call_tool(spec, "no_such_tool", raw=True)
        assert missing["isError"] is True and "no_such_tool" in missing["content"][0]["text"]
        many = await asyncio.gather(
            *(lean_pool.call_tool(spec, "echo", {"text": f"m{i}"}, raw=True) for i in range(40))
        )
        assert [r["content"][0]["text"] for r in many] == [f"m{i}" for i in range(40)]
        stats = (await lean_pool.stats())["servers"]["remote"]
        assert stats["starts"] == 1 and stats["failures"] == 0


async def test_a_json_rpc_error_keeps_its_code_and_data(any_spec):
    spec = any_spec
    async with Pool() as pool:
        with pytest.raises(MCPError) as caught:
            await pool.call_tool(
                spec, "rpc_error", {"code": -32042, "message": "not today"}, raw=True
            )
        assert (caught.value.code, caught.value.message, caught.value.data) == (
            -32042,
            "not today",
            {"why": "asked to"},
        )
        # An error is an answer: the backend works, the connection stays.
        assert (await pool.stats())["servers"]["remote"]["circuit"] == "closed"
        assert (await pool.call_tool(spec, "echo", {"text": "still"}, raw=True))["content"][0][
            "text"
        ] == "still"
        assert (await pool.stats())["servers"]["remote"]["starts"] == 1


async def test_progress_and_log_lines_on_the_stream_reach_the_caller_before_the_result():
    proc, port = _serve("http")
    try:
        spec = ServerSpec("remote", transport="streamable_http", url=f"http://127.0.0.1:{port}/mcp")
        events: list[str] = []

        async def progress(value: float, total: float | None, message: str | None) -> None:
            events.append(f"progress {value:g}/{total:g}")

        async def log(params: dict) -> None:
            events.append(f"log {params['data']}")

        async with Pool() as pool:
            await pool.call_tool(spec, "echo", {"text": "warm"}, raw=True)
            assert _lean(pool, "remote") is not None
            result = await pool.call_tool(
                spec, "progress", {"steps": 3}, progress_callback=progress, raw=True
            )
            events.append(f"result {result['content'][0]['text']}")
            await pool.call_tool(spec, "chatty", {"count": 2}, relay=Relay(log=log), raw=True)
        assert events[:4] == [
            "progress 1/3",
            "progress 2/3",
            "progress 3/3",
            f"result {result['content'][0]['text']}",
        ]
        assert events[4:] == ["log line 0", "log line 1"]
    finally:
        proc.kill()
        proc.wait()


async def test_a_timeout_or_a_cancelled_caller_cancels_the_backend_work(any_spec):
    spec = any_spec
    async with Pool() as pool:
        before = (await pool.call_tool(spec, "cancellations", raw=True))["structuredContent"][
            "result"
        ]
        with pytest.raises(CallTimeout):
            await pool.call_tool(spec, "slow", {"seconds": 30}, timeout=0.5, raw=True)
        task = asyncio.create_task(pool.call_tool(spec, "slow", {"seconds": 30}, raw=True))
        await asyncio.sleep(0.3)  # the call reaches the backend (nothing to watch for it)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

        async def count() -> int:
            return (await pool.call_tool(spec, "cancellations", raw=True))["structuredContent"][
                "result"
            ]

        async def both_cancelled() -> bool:
            return await count() >= before + 2

        await eventually_async(both_cancelled, what="the backend to cancel both abandoned calls")
        assert await count() == before + 2, "both abandoned calls were cancelled in the backend"
        assert (await pool.stats())["servers"]["remote"]["starts"] == 1, (
            "a timeout does not cost the session"
        )


async def test_a_stateless_backend_takes_the_lean_path_without_waiting_for_a_get_stream():
    proc, port = _serve("http-stateless")
    try:
        spec = ServerSpec("remote", transport="streamable_http", url=f"http://127.0.0.1:{port}/mcp")
        async with Pool() as pool:
            started = time.monotonic()
            assert (await pool.call_tool(spec, "echo", {"text": "first"}, raw=True))["content"][0][
                "text"
            ] == "first"
            assert time.monotonic() - started < 1.5, (
                "no GET stream to wait for without a session id"
            )
            lean = _lean(pool, "remote")
            assert isinstance(lean, LeanHttp) and lean.link.session_id is None
            results = await asyncio.gather(
                *(pool.call_tool(spec, "add", {"a": i, "b": 1}, raw=True) for i in range(10))
            )
            assert [r["structuredContent"]["result"] for r in results] == [i + 1 for i in range(10)]
    finally:
        proc.kill()
        proc.wait()


async def test_a_stdio_child_dying_mid_call_is_a_crash_and_the_next_call_starts_a_new_one():
    spec = sdk_spec("remote")
    async with Pool() as pool:
        first = (await pool.call_tool(spec, "pid", raw=True))["structuredContent"]["result"]
        assert isinstance(_lean(pool, "remote"), LeanStdio)
        with pytest.raises(ServerCrashed):
            await pool.call_tool(spec, "crash", raw=True)
        after = (await pool.call_tool(spec, "pid", raw=True))["structuredContent"]["result"]
        assert after != first and (await pool.stats())["servers"]["remote"]["starts"] == 2


async def test_a_stdio_call_with_progress_keeps_the_sdk_path_and_gets_its_progress():
    events: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        events.append(value)

    async with Pool() as pool:
        result = await pool.call_tool(
            sdk_spec("remote"), "progress", {"steps": 3}, progress_callback=progress, raw=True
        )
    assert events == [1, 2, 3] and not result["isError"]


async def test_a_restarted_backend_answers_404_and_the_call_runs_on_a_new_session():
    backend = HttpBackend().start()
    try:
        spec = ServerSpec("remote", transport="streamable_http", url=backend.url)
        async with Pool() as pool:
            first = (await pool.call_tool(spec, "pid", raw=True))["structuredContent"]["result"]
            assert _lean(pool, "remote") is not None
            await asyncio.to_thread(backend.restart)
            results = await asyncio.gather(
                *(pool.call_tool(spec, "pid", raw=True) for _ in range(6))
            )
            assert (
                {r["structuredContent"]["result"] for r in results}
                == {backend.process.pid}
                != {first}
            )
            stats = (await pool.stats())["servers"]["remote"]
            assert stats["starts"] == 2 and "no longer knows our session" in stats["last_error"]
            assert _lean(pool, "remote") is not None
    finally:
        backend.stop()


async def test_a_backend_gone_fails_the_call_as_a_crash_and_the_next_start_is_clean():
    backend = HttpBackend().start()
    try:
        spec = ServerSpec("remote", transport="streamable_http", url=backend.url)
        async with Pool() as pool:
            await pool.call_tool(spec, "echo", {"text": "up"}, raw=True)
            backend.stop()
            with pytest.raises(Exception) as caught:
                await pool.call_tool(spec, "echo", {"text": "down"}, raw=True)
            assert "remote" in str(caught.value)
            backend.start()
            failures: list[Exception] = []

            async def answered() -> dict | None:
                try:
                    return await pool.call_tool(spec, "echo", {"text": "back"}, raw=True)
                except Exception as exc:
                    failures.append(exc)
                    return None

            result = await eventually_async(
                answered,
                timeout=20,
                interval=0.3,
                what=lambda: f"the restarted backend to answer; last: {failures[-1]!r}",
            )
            assert result["content"][0]["text"] == "back"
    finally:
        backend.stop()


async def test_a_keep_alive_connection_the_server_closed_while_idle_is_replaced():
    """uvicorn closes an idle keep-alive connection after 5 s: the next call must not notice."""
    proc, port = _serve("http")
    try:
        spec = ServerSpec("remote", transport="streamable_http", url=f"http://127.0.0.1:{port}/mcp")
        async with Pool() as pool:
            await pool.call_tool(spec, "echo", {"text": "one"}, raw=True)
            idle = list(_lean(pool, "remote")._h1.idle)
            assert len(idle) == 1
            await asyncio.sleep(6)  # past uvicorn's 5 s keep-alive: the server closes it
            assert (await pool.call_tool(spec, "echo", {"text": "two"}, raw=True))["content"][0][
                "text"
            ] == "two"
            assert idle[0] not in _lean(pool, "remote")._h1.idle
            assert (await pool.stats())["servers"]["remote"]["failures"] == 0
    finally:
        proc.kill()
        proc.wait()


async def test_the_configured_headers_reach_the_backend_on_the_lean_path(backend):
    _, url = backend
    spec = ServerSpec(
        "remote", transport="streamable_http", url=url, headers={"X-Api-Key": "s3cret"}
    )
    async with Pool() as pool:
        seen = await pool.call_tool(spec, "header", {"name": "x-api-key"}, raw=True)
        assert _lean(pool, "remote") is not None
        assert seen["content"][0]["text"] == "s3cret"
        name = await pool.call_tool(spec, "header", {"name": "mcp-name"}, raw=True)
        assert name["content"][0]["text"] == "header"
