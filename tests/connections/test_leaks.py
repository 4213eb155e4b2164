"""Churn leaves nothing behind: no child processes, no file descriptors, no tasks."""

import asyncio

import pytest

from apps.connections.breaker import BreakerPolicy
from apps.connections.errors import ServerCrashed
from apps.connections.pool import Pool, PoolOptions
from tests.connections.conftest import child_pids, open_fds, text, tiny_spec
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(120)]


async def _connect_and_close(pool: Pool, name: str, rounds: int) -> None:
    spec = tiny_spec(name)
    for _ in range(rounds):
        assert text(await pool.call_tool(spec, "echo", {"text": name})) == name
        await pool.close(name)


async def _crash_and_recover(pool: Pool, name: str, rounds: int) -> None:
    spec = tiny_spec(name)
    for _ in range(rounds):
        with pytest.raises(ServerCrashed, match="tiny: crashing on request"):
            await pool.call_tool(spec, "crash", {"code": 7})
        assert text(await pool.call_tool(spec, "echo", {"text": "ok"})) == "ok"


async def test_500_connect_close_and_50_crash_restart_cycles_leak_nothing():
    options = PoolOptions(breaker=BreakerPolicy(retry_min=0.0), shutdown_grace=1.0)
    async with Pool(options) as warmup:  # first use imports and caches lazily-loaded modules
        await _connect_and_close(warmup, "warmup", 2)
    fds, tasks = open_fds(), len(asyncio.all_tasks())

    async with Pool(options) as pool:
        await asyncio.gather(*(_connect_and_close(pool, f"churn{i}", 25) for i in range(20)))
        await asyncio.gather(*(_crash_and_recover(pool, f"crash{i}", 10) for i in range(5)))
        stats = await pool.stats()
        assert (
            sum(s["starts"] for s in stats["servers"].values()) == 500 + 5 * 11
        )  # each crash round restarts once
        assert stats["live_processes"] == 5

    await eventually_async(lambda: not child_pids(), timeout=5)
    await eventually_async(
        lambda: open_fds() <= fds, timeout=5, what=lambda: f"fds back to {fds}, not {open_fds()}"
    )
    await eventually_async(lambda: len(asyncio.all_tasks()) <= tasks, timeout=5)
