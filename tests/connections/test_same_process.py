"""The same-process shortcut: a server whose pool worker runs in this process is called there,
without Redis; a server owned by another worker still goes out to it."""

from __future__ import annotations

import asyncio
import os
import uuid

import mcp_types as types
import pytest
import redis
from mcp.shared.exceptions import MCPError

from apps.connections import worker as worker_module
from apps.connections.celery_hooks import PoolWorkerThread
from apps.connections.errors import CallTimeout
from apps.connections.hooks import Relay
from apps.connections.remote import RemotePool, _affinity
from tests.connections.conftest import sdk_spec, text, tiny_spec
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

REDIS_URL = os.environ.get("MCPHUB_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def _start_workers(count: int):
    """Pool workers on threads of this process (as in a Celery worker), on a prefix of their own."""
    try:
        redis.Redis.from_url(REDIS_URL, socket_timeout=2).ping()
    except redis.RedisError:
        pytest.skip("needs Redis")
    prefix = f"test-here:{uuid.uuid4().hex[:8]}"
    threads = [PoolWorkerThread(REDIS_URL, {"redis_prefix": prefix}) for _ in range(count)]
    for thread in threads:
        thread.start()
    return prefix, threads


@pytest.fixture
def workers():
    prefix, threads = _start_workers(2)
    yield prefix, [t.worker for t in threads]
    for thread in threads:
        thread.stop()


@pytest.fixture
def worker():
    """One worker: every server is owned here."""
    prefix, threads = _start_workers(1)
    yield prefix
    threads[0].stop()


class _Spy:
    """Counts the calls a RemotePool sends out to workers (by link or by Redis), by worker id."""

    def __init__(self, pool: RemotePool) -> None:
        self.pushed: list[str] = []
        original = pool._send

        async def record(worker, op, *args, **kwargs):
            self.pushed.append(worker)
            return await original(worker, op, *args, **kwargs)

        pool._send = record


async def _pool(prefix: str, expected: int) -> RemotePool:
    pool = RemotePool(REDIS_URL, prefix=prefix, same_process=True)

    async def registered() -> bool:
        return len(await pool._live_workers(refresh=True)) == expected

    await eventually_async(registered, timeout=5, what=f"{expected} pool workers registered")
    return pool


def _owned_by(worker_id: str, candidates: list[str], servers: int = 64) -> str:
    """A server name that rendezvous hashing gives to `worker_id` among `candidates`."""
    for n in range(servers):
        name = f"s{n}"
        if max(candidates, key=lambda w: _affinity(w, name)) == worker_id:
            return name
    raise AssertionError("no server name routes there")


async def test_a_server_owned_here_is_called_without_redis(workers):
    prefix, (first, second) = workers
    async with await _pool(prefix, 2) as pool:
        spy = _Spy(pool)
        ids = [first.worker_id, second.worker_id]
        for owner in (first, second):
            spec = tiny_spec(_owned_by(owner.worker_id, ids))
            result = await pool.call_tool(spec, "echo", {"text": "hi"})
            assert text(result) == "hi"
            assert (await pool.call_tool(spec, "echo", {"text": "x"}, raw=True))["content"]
            assert [t.name for t in await pool.list_tools(spec)][:1] == ["echo"]
            # The backend lives in the owner's pool, on the owner's loop.
            assert spec.name in owner.pool.stats_now()["servers"]
        assert spy.pushed == []


async def test_a_server_owned_by_another_worker_still_goes_out_to_it(workers, monkeypatch):
    prefix, (here, elsewhere) = workers
    async with await _pool(prefix, 2) as pool:
        # As if `elsewhere` ran in another process: only `here` is in this process's registry.
        monkeypatch.delitem(worker_module._here, elsewhere.worker_id)
        spy = _Spy(pool)
        ids = [here.worker_id, elsewhere.worker_id]
        local = tiny_spec(_owned_by(here.worker_id, ids))
        remote = tiny_spec(_owned_by(elsewhere.worker_id, ids))
        assert text(await pool.call_tool(local, "echo", {"text": "a"})) == "a"
        assert spy.pushed == []
        assert text(await pool.call_tool(remote, "echo", {"text": "b"})) == "b"
        assert spy.pushed == [elsewhere.worker_id]
        assert remote.name in elsewhere.pool.stats_now()["servers"]
        assert remote.name not in here.pool.stats_now()["servers"]


async def test_progress_logs_and_sampling_reach_the_caller_on_its_own_loop(worker):
    prefix = worker
    async with await _pool(prefix, 1) as pool:
        spy = _Spy(pool)
        caller = asyncio.get_running_loop()
        seen: list[str] = []

        async def progress(done: float, total: float | None, message: str | None) -> None:
            assert asyncio.get_running_loop() is caller
            seen.append(f"progress:{done:g}")

        async def log(params: dict) -> None:
            assert asyncio.get_running_loop() is caller
            seen.append(f"log:{params['data']}")

        async def answer(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
            assert asyncio.get_running_loop() is caller
            content = types.TextContent(type="text", text="sampled")
            return types.CreateMessageResult(role="assistant", model="m", content=content)

        spec = sdk_spec("here-echo")
        result = await pool.call_tool(spec, "progress", {"steps": 2}, progress_callback=progress)
        assert text(result) == "progressed"
        result = await pool.call_tool(spec, "chatty", {"count": 2}, relay=Relay(log=log), raw=True)
        assert result["content"][0]["text"] == "said 2"
        result = await pool.call_tool(spec, "ask", {"question": "q"}, relay=Relay(sampling=answer))
        assert text(result) == "sampled"
        assert spy.pushed == []
    assert "log:line 0" in seen and "log:line 1" in seen
    assert seen.index("log:line 1") > seen.index("log:line 0")
    assert any(s.startswith("progress:") for s in seen)


async def test_errors_and_timeouts_are_those_of_the_wire(worker):
    prefix = worker
    async with await _pool(prefix, 1) as pool:
        spec = sdk_spec("here-errors")
        with pytest.raises(MCPError, match="boom"):
            await pool.call_tool(spec, "rpc_error", {"code": -32001, "message": "boom"})
        with pytest.raises(CallTimeout):
            await pool.call_tool(spec, "slow", {"seconds": 5}, timeout=0.3)
        # The worker's pool is still fine after both.
        assert text(await pool.call_tool(spec, "echo", {"text": "ok"})) == "ok"


async def test_a_cancelled_caller_cancels_the_call_on_the_workers_loop(worker):
    prefix = worker
    async with await _pool(prefix, 1) as pool:
        spec = sdk_spec("here-cancel")
        await pool.call_tool(spec, "echo", {"text": "warm"})
        task = asyncio.create_task(pool.call_tool(spec, "slow", {"seconds": 30}))
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

        async def cancellations() -> str | None:
            count = text(await pool.call_tool(spec, "cancellations"))
            return count if count != "0" else None

        assert await eventually_async(cancellations, what="the cancel reaching the server") == "1"
