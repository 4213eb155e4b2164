"""A call that times out or is abandoned tells the backend (notifications/cancelled)."""

import asyncio

import pytest

from apps.connections.errors import CallTimeout
from tests.connections.conftest import inflight, sdk_spec, text
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


async def test_timeout_and_caller_cancel_both_cancel_the_backend_work(pool):
    spec = sdk_spec("echo", timeout=0.5)
    pid = int(text(await pool.call_tool(spec, "pid")))

    with pytest.raises(CallTimeout, match="timed out after 0.5s"):
        await pool.call_tool(spec, "slow", {"seconds": 30})
    call = asyncio.create_task(pool.call_tool(spec, "slow", {"seconds": 30}, timeout=20))
    await eventually_async(lambda: inflight(pool) == 1)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call

    async def both_cancelled() -> bool:
        return text(await pool.call_tool(spec, "cancellations")) == "2"

    await eventually_async(both_cancelled, what="the backend to count both cancellations")
    # The backend answered the probe after the timeout, so it was kept, not restarted.
    assert int(text(await pool.call_tool(spec, "pid"))) == pid
