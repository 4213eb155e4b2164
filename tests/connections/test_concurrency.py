"""Many calls share one backend session at once instead of queueing behind each other."""

import asyncio
import time

import pytest

from tests.connections.conftest import sdk_spec, text

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


async def test_fifty_slow_calls_run_concurrently_on_one_process(pool):
    spec = sdk_spec("echo")
    await pool.ping(spec)
    started = time.monotonic()
    results = await asyncio.gather(
        *(pool.call_tool(spec, "slow", {"seconds": 0.5}) for _ in range(50))
    )
    assert [text(r) for r in results] == ["done"] * 50
    assert time.monotonic() - started < 4.0  # serial would take 25 s
    stats = (await pool.stats())["servers"]["echo"]
    assert stats["starts"] == 1 and stats["calls"] == 51


async def test_mixed_concurrent_calls_get_their_own_answers(pool):
    spec = sdk_spec("echo")
    results = await asyncio.gather(
        *(pool.call_tool(spec, "add", {"a": i, "b": i}) for i in range(100))
    )
    assert [r.structured_content["result"] for r in results] == [2 * i for i in range(100)]
