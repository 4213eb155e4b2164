"""A rolling restart of the pool workers (a new Celery worker up before the old one gets SIGTERM)
fails no call: calls in flight finish within the drain, queued ones move to the new worker, and
the old worker exits soon after its last call (not at the drain's bound). Also: while no pool
worker runs yet, a waiting caller (a run, a chat turn: `hub_patience`) is served once one starts,
while an MCP client (no patience) is told at once."""

from __future__ import annotations

import asyncio
import signal
import time

import pytest
import redis

from apps.connections.errors import HubUnavailable
from apps.connections.remote import RemotePool
from apps.connections.worker import DEFAULT_PREFIX, workers_key
from apps.toolsets.calls import _patiently
from tests.connections.conftest import free_port, live_pool, sdk_spec, text, tiny_spec
from tests.live_hub import hub_env, start_redis, start_worker, stop
from tests.waiting import eventually

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def redis_url(tmp_path):
    server = start_redis(port := free_port(), tmp_path)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.kill()
        server.wait()


@pytest.fixture
def env(redis_url, tmp_path, django_db_blocker):
    with django_db_blocker.unblock():
        return hub_env(REDIS_URL=redis_url, MCPHUB_DATA_DIR=str(tmp_path))


def _registered(url: str) -> list[str]:
    client = redis.Redis.from_url(url)
    try:
        return [w.decode() for w in client.zrange(workers_key(DEFAULT_PREFIX), 0, -1)]
    finally:
        client.close()


async def test_a_rolling_restart_fails_no_call_and_the_old_worker_exits_promptly(
    redis_url, env, tmp_path
):
    old = start_worker(env, tmp_path, name="old")
    new = None
    try:
        eventually(lambda: len(_registered(redis_url)) == 1, timeout=90, what="the old worker")
        async with await live_pool(redis_url) as pool:
            fast, slow = tiny_spec("fast-roll", "--tag", "fast-roll"), sdk_spec("slow-roll")
            assert text(await pool.call_tool(fast, "echo", {"text": "warm"})) == "warm"
            await pool.call_tool(slow, "echo", {"text": "warm"})
            new = start_worker(env, tmp_path, name="new")
            eventually(lambda: len(_registered(redis_url)) == 2, timeout=90, what="the new worker")

            errors: list[str] = []
            calls = 0
            stop_calling = asyncio.Event()

            async def caller() -> None:
                nonlocal calls
                while not stop_calling.is_set():
                    try:
                        assert text(await pool.call_tool(fast, "echo", {"text": "hi"})) == "hi"
                    except Exception as exc:  # noqa: BLE001 - counted: the test wants none
                        errors.append(repr(exc))
                    calls += 1

            callers = [asyncio.ensure_future(caller()) for _ in range(8)]
            in_flight = [
                asyncio.ensure_future(pool.call_tool(slow, "slow", {"seconds": 2}))
                for _ in range(4)
            ]
            await asyncio.sleep(0.5)
            signalled = time.monotonic()
            old.send_signal(signal.SIGTERM)
            exited = await asyncio.to_thread(old.wait, 30)
            took = time.monotonic() - signalled
            await asyncio.sleep(1.0)  # calls go on after the old worker is gone
            stop_calling.set()
            await asyncio.gather(*callers)
            results = await asyncio.gather(*in_flight, return_exceptions=True)
    finally:
        stop([p for p in (old, new) if p is not None])

    assert exited is not None
    assert [text(r) if not isinstance(r, BaseException) else repr(r) for r in results] == [
        "done"
    ] * 4
    assert errors == [] and calls > 16, errors[:3]
    # Its in-flight calls needed ~1.5 s more; the drain allows 15 s. A worker that waits out its
    # bounds (measured 19.4 s) holds a deploy back for nothing.
    assert took < 10.0, f"the old worker took {took:.1f} s to exit"


async def test_no_pool_worker_yet_is_waited_out_by_a_patient_caller(redis_url, env, tmp_path):
    pool = RemotePool(redis_url)
    worker = None
    try:
        fast = tiny_spec("fast-wait", "--tag", "fast-wait")
        with pytest.raises(HubUnavailable, match="no pool workers are running"):
            await pool.call_tool(fast, "echo", {"text": "now"})  # an MCP client hears it at once
        worker = start_worker(env, tmp_path, name="late")
        result = await _patiently(lambda: pool.call_tool(fast, "echo", {"text": "later"}), 120)
    finally:
        await pool.aclose()
        if worker is not None:
            stop([worker])

    assert text(result) == "later"
