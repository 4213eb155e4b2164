"""A chatty backend's stderr is kept, bounded, and never blocks it."""

import pytest

from apps.connections.errors import ServerStartFailed
from apps.connections.pool import Pool, PoolOptions
from apps.connections.stderr import StderrTail
from tests.connections.conftest import text, tiny_spec

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


async def test_a_flood_is_captured_in_a_bounded_tail():
    async with Pool(PoolOptions(stderr_lines=500, stderr_bytes=64 * 1024)) as pool:
        spec = tiny_spec("noisy", "--stderr-lines", "5000")
        assert text(await pool.call_tool(spec, "spam", {"lines": 200_000})) == "spammed"
        tail = await pool.stderr_tail("noisy")
        lines = tail.split("\n")
        assert len(lines) <= 500 and len(tail.encode()) <= 64 * 1024
        assert lines[-1] == "spam line 199999"


async def test_start_failure_quotes_stderr():
    async with Pool() as pool:
        with pytest.raises(
            ServerStartFailed, match=r"process exited with code 3; stderr: tiny: bad config"
        ):
            await pool.call_tool(tiny_spec("broken", "--fail", "bad config"), "echo")
        assert "tiny: bad config" in await pool.stderr_tail("broken")


def test_tail_limits_lines_bytes_and_unterminated_floods():
    tail = StderrTail(max_lines=3, max_bytes=50)
    tail.feed(b"one\ntwo\nthree\nfour\nfi")
    assert (
        tail.text() == "two\nthree\nfour\nfi"
    )  # the last 3 complete lines, then the one in progress
    tail.feed(b"x" * 200)
    assert len(tail.text()) <= 50 + 10
