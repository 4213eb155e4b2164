"""A backend that keeps failing is restarted with backoff, then left alone for a while."""

import time

import pytest

from apps.connections.breaker import BreakerPolicy
from apps.connections.errors import ServerStartFailed, ServerUnavailable
from apps.connections.pool import Pool, PoolOptions
from tests.connections.conftest import tiny_spec

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

POLICY = BreakerPolicy(threshold=3, backoff_base=0.05, open_seconds=0.6)


async def test_circuit_opens_after_repeated_failures_and_half_opens_later():
    async with Pool(PoolOptions(breaker=POLICY)) as pool:
        spec = tiny_spec("flaky", "--fail", "database is down")
        for _ in range(3):
            with pytest.raises(ServerStartFailed, match="database is down"):
                await pool.call_tool(spec, "echo")

        started = time.monotonic()
        with pytest.raises(ServerUnavailable, match=r"server 'flaky' is unavailable \(circuit open, retry in 1s\): "):
            await pool.call_tool(spec, "echo")
        assert time.monotonic() - started < 0.05
        stats = (await pool.stats())["servers"]["flaky"]
        assert (stats["starts"], stats["circuit"]) == (3, "open")

        time.sleep(0.7)
        with pytest.raises(ServerStartFailed):  # the half-open trial runs, and fails again
            await pool.call_tool(spec, "echo")
        assert (await pool.stats())["servers"]["flaky"]["starts"] == 4


async def test_fixing_the_config_closes_the_circuit():
    async with Pool(PoolOptions(breaker=POLICY)) as pool:
        for _ in range(3):
            with pytest.raises(ServerStartFailed):
                await pool.call_tool(tiny_spec("svc", "--fail", "typo"), "echo")
        assert (await pool.call_tool(tiny_spec("svc"), "echo", {"text": "fixed"})).content[0].text == "fixed"
        assert (await pool.stats())["servers"]["svc"]["circuit"] == "closed"
