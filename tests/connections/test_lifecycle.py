"""Idle backends are closed; starts are rate-limited so 100 servers coming up is not a storm."""

import asyncio
import time

import pytest

from apps.connections.pool import Pool, PoolOptions
from tests.connections.conftest import child_pids, text, tiny_spec
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


async def test_idle_connections_close_and_reopen_on_demand():
    async with Pool(PoolOptions(idle_timeout=0.3)) as pool:
        spec = tiny_spec("sleepy")
        await pool.call_tool(spec, "echo", {"text": "x"})
        assert len(child_pids()) == 1
        await eventually_async(lambda: not child_pids(), timeout=3)
        assert (await pool.stats())["open_sessions"] == 0
        assert text(await pool.call_tool(spec, "echo", {"text": "again"})) == "again"


async def test_start_concurrency_is_capped():
    async with Pool(PoolOptions(start_concurrency=2)) as pool:
        specs = [tiny_spec(f"s{i}", "--startup-delay", "0.3") for i in range(8)]
        started = time.monotonic()
        results = await asyncio.gather(
            *(pool.call_tool(s, "echo", {"text": s.name}) for s in specs)
        )
        assert [text(r) for r in results] == [s.name for s in specs]
        stats = await pool.stats()
        assert stats["max_concurrent_starts"] == 2
        assert time.monotonic() - started >= 4 * 0.3


async def test_global_session_cap_evicts_the_least_recently_used():
    async with Pool(PoolOptions(max_sessions=2)) as pool:
        for name in ("a", "b", "c"):
            await pool.call_tool(tiny_spec(name), "echo", {"text": name})
        servers = (await pool.stats())["servers"]
        assert [servers[n]["state"] for n in "abc"] == ["closed", "open", "open"]
        assert len(child_pids()) == 2
