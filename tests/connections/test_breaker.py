"""A backend that keeps failing is retried with backoff, fails fast meanwhile, and is back soon after it is fixed."""

import asyncio
import logging
import time

import pytest

from apps.connections.breaker import BreakerPolicy
from apps.connections.errors import PoolError, ServerStartFailed, ServerUnavailable
from apps.connections.pool import Pool, PoolOptions
from tests.connections.conftest import text, tiny_spec

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

POLICY = BreakerPolicy(threshold=3, retry_min=0.05, retry_ratio=0.25, retry_max=0.6)
# The first test calls again right after the circuit opens: 0.05 s was too short a window on a
# loaded machine (the half-open trial had already begun); 0.3 s still reads "retry in 0.3s".
OPENED = BreakerPolicy(threshold=3, retry_min=0.3, retry_ratio=0.25, retry_max=0.6)


async def test_circuit_opens_after_repeated_failures_and_half_opens_later():
    async with Pool(PoolOptions(breaker=OPENED)) as pool:
        spec = tiny_spec("flaky", "--fail", "database is down")
        for _ in range(3):
            with pytest.raises(ServerStartFailed, match="database is down"):
                await pool.call_tool(spec, "echo")

        started = time.monotonic()
        with pytest.raises(
            ServerUnavailable,
            match=r"server 'flaky' is unavailable \(circuit open, retry in 0\.\ds\): ",
        ):
            await pool.call_tool(spec, "echo")
        # At once (measured 0.2 ms), not after the open window (0.3 s at least): a 0.25 s bound.
        assert time.monotonic() - started < 0.25
        stats = (await pool.stats())["servers"]["flaky"]
        assert (stats["starts"], stats["circuit"]) == (3, "open")

        time.sleep(0.7)  # past the open window (retry_max 0.6 s)
        with pytest.raises(ServerStartFailed):  # the half-open trial runs, and fails again
            await pool.call_tool(spec, "echo")
        assert (await pool.stats())["servers"]["flaky"]["starts"] == 4


async def test_closing_a_server_gives_it_a_fresh_chance_at_once():
    async with Pool(PoolOptions(breaker=OPENED)) as pool:
        spec = tiny_spec("down", "--fail", "database is down")
        for _ in range(3):
            with pytest.raises(ServerStartFailed):
                await pool.call_tool(spec, "echo")
        with pytest.raises(ServerUnavailable, match="circuit open"):
            await pool.call_tool(spec, "echo")

        await pool.close("down")  # within the open window (0.3 s at least)

        with pytest.raises(ServerStartFailed, match="database is down"):  # tried, not refused
            await pool.call_tool(spec, "echo")
        assert (await pool.stats())["servers"]["down"]["starts"] == 4


async def test_fixing_the_config_closes_the_circuit():
    async with Pool(PoolOptions(breaker=POLICY)) as pool:
        for _ in range(3):
            with pytest.raises(ServerStartFailed):
                await pool.call_tool(tiny_spec("svc", "--fail", "typo"), "echo")
        assert (await pool.call_tool(tiny_spec("svc"), "echo", {"text": "fixed"})).content[
            0
        ].text == "fixed"
        assert (await pool.stats())["servers"]["svc"]["circuit"] == "closed"


async def _call_until_ok(pool: Pool, spec, errors: list[float]) -> float:
    """Call in a loop (8 callers' worth of load); the time of the first success."""
    while True:
        started = time.monotonic()
        try:
            await pool.call_tool(spec, "echo", {"text": "ok"})
            return time.monotonic()
        except PoolError:
            errors.append(time.monotonic() - started)
            await asyncio.sleep(0.01)  # callers retry at once, as a busy client would


async def test_a_backend_down_for_seconds_is_used_again_within_a_fraction_of_its_outage(tmp_path):
    """Default policy: the old breaker kept such a backend refused for ~26 s after it was fixed."""
    down = tmp_path / "database-down"
    down.touch()
    spec = tiny_spec("orders", "--fail", "database is down", "--while", str(down))
    async with Pool() as pool:
        errors: list[float] = []
        callers = [asyncio.ensure_future(_call_until_ok(pool, spec, errors)) for _ in range(8)]
        await asyncio.sleep(3.0)  # the scenario: down for 3 s under load
        down.unlink()
        fixed_at = time.monotonic()
        recovered_at = min(await asyncio.gather(*callers))
        starts = (await pool.stats())["servers"]["orders"]["starts"]

    assert recovered_at - fixed_at < 2.0, f"recovered {recovered_at - fixed_at:.1f}s after the fix"
    assert max(errors) < 1.0, "while it was down, callers got their error at once"
    assert starts < 20, f"{starts} starts in 3 s: retries must back off while they keep failing"


async def test_after_a_start_hung_calls_fail_fast_with_the_reason_until_a_retry_succeeds(tmp_path):
    hung = tmp_path / "hung"
    hung.touch()
    spec = tiny_spec("stuck", "--silent", "--while", str(hung))
    # A caller waits retry_wait (0.05 s) for a start in progress, then fails with its reason: fast
    # is well under the 1 s that waiting out another start would take (bound 0.5 s, 10x margin).
    async with Pool(PoolOptions(connect_timeout=1.0, retry_wait=0.05)) as pool:
        with pytest.raises(ServerStartFailed, match="no answer to initialize within 1s"):
            await pool.call_tool(spec, "echo")  # the first start waits out its timeout

        for _ in range(5):
            started = time.monotonic()
            with pytest.raises(PoolError, match="no answer to initialize within 1s"):
                await pool.call_tool(spec, "echo")
            assert time.monotonic() - started < 0.5

        hung.unlink()
        errors: list[float] = []
        await asyncio.wait_for(_call_until_ok(pool, spec, errors), 10)
        assert text(await pool.call_tool(spec, "echo", {"text": "back"})) == "back"
        assert max(errors, default=0) < 0.5


async def test_a_backend_failing_the_same_way_is_logged_once_until_it_works(caplog):
    caplog.set_level(logging.DEBUG, logger="apps.connections.pool")
    async with Pool(PoolOptions(breaker=POLICY)) as pool:
        for _ in range(3):
            with pytest.raises(ServerStartFailed):
                await pool.call_tool(tiny_spec("svc", "--fail", "missing API key"), "echo")
        await pool.call_tool(tiny_spec("svc"), "echo", {"text": "fixed"})
        with pytest.raises(ServerStartFailed):  # broken again after working: worth saying again
            await pool.call_tool(tiny_spec("svc", "--fail", "missing API key"), "echo")

    failures = [
        r
        for r in caplog.records
        if r.name == "apps.connections.pool" and "failed:" in r.getMessage()
    ]
    assert [r.levelno for r in failures] == [
        logging.WARNING,
        logging.DEBUG,
        logging.DEBUG,
        logging.WARNING,
    ]
    assert len({r.getMessage() for r in failures}) == 1  # the same failure each time
