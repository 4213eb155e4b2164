"""A backend that dies mid-call fails that call clearly and quickly; the next call gets a new one."""

import asyncio
import os
import signal
import time

import pytest

from apps.connections.errors import ServerCrashed
from tests.connections.conftest import child_pids, inflight, sdk_spec, text
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


async def test_killed_backend_fails_the_call_and_restarts(pool):
    spec = sdk_spec("echo", timeout=20)
    first_pid = int(text(await pool.call_tool(spec, "pid")))
    call = asyncio.create_task(pool.call_tool(spec, "slow", {"seconds": 30}))
    await eventually_async(lambda: inflight(pool) == 1)

    started = time.monotonic()
    os.killpg(first_pid, signal.SIGKILL)
    with pytest.raises(
        ServerCrashed, match=r"server 'echo' crashed during tools/call slow: .*SIGKILL"
    ):
        await call
    assert time.monotonic() - started < 2.0

    second_pid = int(text(await pool.call_tool(spec, "pid")))
    assert second_pid != first_pid and child_pids() == [second_pid]
    with pytest.raises(ServerCrashed, match="stderr: .*echo: fatal error, exiting"):
        await pool.call_tool(spec, "crash")
    assert text(await pool.call_tool(spec, "echo", {"text": "back"})) == "back"
    stats = (await pool.stats())["servers"]["echo"]
    assert (stats["restarts"], stats["failures"], stats["circuit"]) == (2, 2, "closed")
