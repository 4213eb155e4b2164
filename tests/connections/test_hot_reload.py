"""An admin edits a server's args or env: the next call runs on the new config, running ones finish."""

import asyncio

import pytest

from tests.connections.conftest import child_pids, inflight, text, tiny_spec
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


async def test_changed_args_and_env_take_effect_on_the_next_call(pool):
    v1 = tiny_spec("svc", "--tag", "v1", env={"MODE": "one"})
    assert text(await pool.call_tool(v1, "argv")) == '["--tag", "v1"]'
    old_pid = (await pool.stats())["servers"]["svc"]["pid"]

    v2 = tiny_spec("svc", "--tag", "v2", env={"MODE": "one"})
    assert text(await pool.call_tool(v2, "argv")) == '["--tag", "v2"]'
    v3 = tiny_spec("svc", "--tag", "v2", env={"MODE": "three"})
    assert text(await pool.call_tool(v3, "env", {"name": "MODE"})) == "three"

    assert old_pid not in child_pids() and len(child_pids()) == 1


async def test_in_flight_calls_finish_on_the_old_backend(pool):
    old = tiny_spec("svc", "--tag", "old")
    await pool.call_tool(old, "pid")
    running = asyncio.create_task(pool.call_tool(old, "sleep", {"seconds": 1.0}))
    await eventually_async(lambda: inflight(pool) == 1)

    new = tiny_spec("svc", "--tag", "new")
    assert (
        text(await pool.call_tool(new, "argv")) == '["--tag", "new"]'
    )  # not stuck behind the sleep
    assert len(child_pids()) == 2
    assert text(await running) == "slept"
    await eventually_async(
        lambda: len(child_pids()) == 1, timeout=5, what="the drained backend to close"
    )
