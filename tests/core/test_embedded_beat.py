"""Without REDIS_URL there is no `celery beat`: the web process runs the beat schedule itself."""

from __future__ import annotations

import asyncio

import pytest

from mcphub import beat
from mcphub.celery import app
from tests.waiting import eventually_async

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_schedule_runs_each_entry_at_its_interval_and_survives_a_failure():
    runs: list[str] = []

    @app.task(name="tests.beat_tick")
    def tick() -> None:
        runs.append("tick")

    @app.task(name="tests.beat_boom")
    def boom() -> None:
        runs.append("boom")
        raise RuntimeError("a broken task")

    schedule = {
        "tick": {"task": "tests.beat_tick", "schedule": 0.3},
        "boom": {"task": "tests.beat_boom", "schedule": 0.3},
    }
    runner = asyncio.ensure_future(beat.run_schedule(schedule))
    # It first loads the task modules, then runs each entry every 0.3 s.
    await eventually_async(lambda: runs.count("tick") >= 3 and runs.count("boom") >= 3)
    runner.cancel()

    assert runs.count("tick") >= 3
    assert runs.count("boom") >= 3  # the failure was logged, the schedule went on
