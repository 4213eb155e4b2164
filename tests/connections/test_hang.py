"""A hung backend is detected, killed with its whole group and replaced; nothing is left behind."""

import asyncio
import time

import pytest

from apps.connections.errors import CallTimeout, ServerStartFailed
from apps.connections.pool import Pool, PoolOptions
from tests.connections.conftest import child_pids, sdk_spec, text, tiny_spec
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


async def test_a_blocked_backend_is_restarted_after_the_call_times_out():
    tasks_before = len(asyncio.all_tasks())
    async with Pool(PoolOptions(probe_timeout=0.5, shutdown_grace=0.2)) as pool:
        spec = sdk_spec("echo", timeout=1.0)
        hung_pid = int(text(await pool.call_tool(spec, "pid")))
        with pytest.raises(CallTimeout):
            await pool.call_tool(spec, "block", {"seconds": 600})
        # The next call waits for the liveness probe, which condemns the hung process.
        new_pid = int(text(await pool.call_tool(spec, "pid", timeout=20)))
        assert new_pid != hung_pid
        await eventually_async(lambda: hung_pid not in child_pids(), timeout=5)
        assert (await pool.stats())["servers"]["echo"]["last_error"].startswith(
            "hung: no answer to ping"
        )
    assert child_pids() == []
    await eventually_async(lambda: len(asyncio.all_tasks()) <= tasks_before, timeout=5)


async def test_a_server_that_never_answers_initialize_fails_to_start_in_time():
    async with Pool(PoolOptions(connect_timeout=0.5, shutdown_grace=0.1)) as pool:
        with pytest.raises(ServerStartFailed, match="no answer to initialize within 0.5s"):
            await pool.call_tool(tiny_spec("mute", "--silent"), "echo", {"text": "?"})
        await eventually_async(lambda: not child_pids(), timeout=5)


async def test_a_start_hung_at_initialize_is_stopped_at_once_when_the_pool_closes():
    # Ctrl-C of `mcp_discover` on such a server: nothing to wait for. The start waited out a 4 s
    # margin for a graceful stop it could never see (it watches for one only once initialized).
    pool = Pool(PoolOptions(connect_timeout=60, shutdown_grace=2))
    async with pool:
        call = asyncio.create_task(pool.call_tool(tiny_spec("mute", "--silent"), "echo", {}))
        await eventually_async(child_pids, timeout=10)
        closing = time.monotonic()
    assert time.monotonic() - closing < 3.0
    assert not child_pids()
    (outcome,) = await asyncio.gather(call, return_exceptions=True)
    assert isinstance(outcome, (ServerStartFailed, asyncio.CancelledError))
