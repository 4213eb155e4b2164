"""Work handed over on a direct link (`RemotePool.hand_off`): a pool worker that takes such work
starts it and says so; one that does not, or is stopping, says no and the caller uses Celery."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from apps.connections import worker as worker_module
from apps.connections.pool import Pool, PoolOptions
from tests.connections.test_same_process import _pool, _start_workers

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

KIND = "test.start_thing"


@pytest.fixture
def workers():
    prefix, threads = _start_workers(2)
    yield prefix, threads
    worker_module.take_work(KIND, None)
    for thread in threads:
        thread.stop()


async def test_each_worker_in_turn_starts_what_it_is_handed(workers):
    prefix, threads = workers
    started: list[tuple[str, int]] = []
    worker_module.take_work(
        KIND, lambda work_id: started.append((work_id, threading.get_ident())) or True
    )
    pool = await _pool(prefix, 2)
    try:
        answers = [await pool.hand_off(KIND, f"w{n}") for n in range(4)]
    finally:
        await pool.aclose()
    assert answers == [True] * 4
    assert [work_id for work_id, _ in started] == ["w0", "w1", "w2", "w3"]
    # Started on the pool workers' own loops, both of them: spread as a Celery queue spreads tasks.
    assert {thread for _, thread in started} == {t._thread.ident for t in threads}


async def test_work_no_worker_takes_is_refused_at_once(workers):
    prefix, _ = workers
    pool = await _pool(prefix, 2)
    try:
        began = time.monotonic()
        assert await pool.hand_off(KIND, "w0") is False  # nothing here takes KIND
        assert await pool.hand_off(KIND, "w1") is False
        assert time.monotonic() - began < 1.0  # an answer, not a timeout
    finally:
        await pool.aclose()


async def test_work_whose_start_fails_is_refused(workers):
    prefix, _ = workers

    def broken(work_id: str) -> bool:
        raise RuntimeError("cannot start")

    worker_module.take_work(KIND, broken)
    pool = await _pool(prefix, 2)
    try:
        assert await pool.hand_off(KIND, "w0") is False
    finally:
        await pool.aclose()


async def test_a_stopping_worker_is_handed_nothing(workers):
    prefix, threads = workers
    started: list[str] = []
    worker_module.take_work(KIND, lambda work_id: started.append(work_id) or True)
    pool = await _pool(prefix, 2)
    try:
        for thread in threads:
            thread._loop.call_soon_threadsafe(thread.worker.stop)
        await asyncio.sleep(0.1)
        answers = [await pool.hand_off(KIND, f"w{n}") for n in range(4)]
    finally:
        await pool.aclose()
    assert answers == [False] * 4
    assert started == []


async def test_the_in_process_pool_hands_nothing_over():
    async with Pool(PoolOptions()) as pool:
        assert await pool.hand_off(KIND, "w0") is False
