"""Slow calls do not hold up quick ones on the same server; the per-server cap refuses, never queues."""

import asyncio
import time

import pytest

from apps.connections.errors import ServerUnavailable
from apps.connections.pool import Pool, PoolOptions
from tests.connections.conftest import inflight, sdk_spec, text
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


async def _instant_calls_while_slow_ones_run(pool: Pool, spec, slow: int) -> list[float]:
    await pool.call_tool(spec, "echo", {"text": "warm"})
    slow_calls = [
        asyncio.ensure_future(pool.call_tool(spec, "slow", {"seconds": 4})) for _ in range(slow)
    ]
    await eventually_async(lambda: inflight(pool) == slow)
    took = []
    for i in range(20):
        started = time.monotonic()
        assert text(await pool.call_tool(spec, "echo", {"text": str(i)})) == str(i)
        took.append(time.monotonic() - started)
    assert not any(c.done() for c in slow_calls), (
        "the quick calls ran while every slow one was still running"
    )
    assert [text(r) for r in await asyncio.gather(*slow_calls)] == ["done"] * slow
    return took


async def test_an_instant_tool_does_not_wait_behind_70_slow_calls_on_its_server():
    async with Pool() as pool:
        took = await _instant_calls_while_slow_ones_run(pool, sdk_spec("echo"), 70)
    assert max(took) < 1.0, f"an instant call took {max(took):.2f}s: it queued behind the slow ones"


async def test_past_the_per_server_limit_a_call_fails_at_once_with_the_setting_named():
    async with Pool(PoolOptions(max_inflight_per_server=3)) as pool:
        spec = sdk_spec("echo")
        # Started first: what is timed is the refusal, not the server's start (~0.6 s on a loaded machine).
        await pool.call_tool(spec, "echo", {"text": "warm"})
        slow_calls = [
            asyncio.ensure_future(pool.call_tool(spec, "slow", {"seconds": 2})) for _ in range(3)
        ]
        await eventually_async(lambda: inflight(pool) == 3)
        started = time.monotonic()
        with pytest.raises(
            ServerUnavailable,
            match=r"'echo' is busy: 3 requests in flight.*MCPHUB_MAX_INFLIGHT_PER_SERVER",
        ):
            await pool.call_tool(spec, "echo", {"text": "one too many"})
        assert time.monotonic() - started < 0.5
        assert [text(r) for r in await asyncio.gather(*slow_calls)] == ["done"] * 3
        assert text(await pool.call_tool(spec, "echo", {"text": "room again"})) == "room again"
