"""A worker SIGKILLed mid-run loses no completed step: the run is found `interrupted` (the next
worker sweeps it), and `resume` continues from the last completed step, not from the start."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest
from django.conf import settings

from apps.chat.runs.models import Run, RunStep
from tests.chat.conftest import Api
from tests.chat.runs.conftest import start_run, wait_run
from tests.live_hub import (
    free_port,
    hub_env,
    start_private_hub,
    start_redis,
    start_worker,
    stop,
    wait_for_pool_worker,
)
from tests.llm_server import Reply

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(150),
    pytest.mark.skipif(
        not settings.REDIS_URL, reason="a Celery worker to kill needs the production shape"
    ),
]
ROUNDS = 12
FAST_SWEEP = {"MCPHUB_RUN_HEARTBEAT_SECONDS": "1", "MCPHUB_RUN_STALE_SECONDS": "3"}


def _slow_counter(llm) -> None:
    def respond(body: dict) -> Reply:
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        if done < ROUNDS:
            return Reply(tool_calls=[(f"c{done + 1}", "add", {"a": done, "b": 1})], delay=0.3)
        return Reply(text=[f"Counted to {done}"])

    llm.responder = respond


async def _next_worker(hub, log_dir, redis_url: str, **extra: str) -> None:
    """A new worker in place of the stopped one (as a deploy or a supervisor would start)."""
    hub.processes[1] = start_worker(
        hub_env(MCPHUB_DATA_DIR=str(log_dir), REDIS_URL=redis_url, **extra), log_dir, name="worker2"
    )
    await asyncio.to_thread(wait_for_pool_worker, redis_url=redis_url)


async def _resume(api: Api, run_id: str) -> dict:
    resumed = await api.client.post(f"/runs/{run_id}/resume/")
    assert resumed.status_code == 200, resumed.text
    return await wait_run(api, run_id, timeout=60)


async def test_a_killed_workers_run_is_interrupted_then_resumed_without_repeating_steps(
    tmp_path, llm, alice_provider, alice_endpoint, alice_hub_token
):
    _slow_counter(llm)
    redis = start_redis(port := free_port(), tmp_path)
    redis_url = f"redis://127.0.0.1:{port}/0"
    hub = start_private_hub(tmp_path / "hub", redis_url=redis_url, **FAST_SWEEP)
    try:
        async with Api(hub.base_url, alice_hub_token) as api:
            run = await start_run(api, task="Count slowly", servers=["echo"])
            await wait_run(api, run["id"], until=("running",), rounds=4)
            worker = hub.processes[1]
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
            killed_at = time.monotonic()
            kept = (await api.client.get(f"/runs/{run['id']}/")).json()["rounds"]
            await asyncio.sleep(3.5)  # its heartbeat goes stale
            await _next_worker(hub, tmp_path / "hub", redis_url, **FAST_SWEEP)
            interrupted = await wait_run(api, run["id"], until=("interrupted",), timeout=30)
            found_after = time.monotonic() - killed_at
            done = await _resume(api, run["id"])
    finally:
        stop(hub.processes)
        redis.kill()
        redis.wait()

    assert interrupted["rounds"] >= kept >= 4
    assert found_after < 60
    assert done["status"] == "succeeded", done["error"]
    assert done["answer"] == f"Counted to {ROUNDS}"
    rounds = [s["round"] for s in done["steps"]]
    assert rounds == list(range(1, ROUNDS + 2))
    # Each completed step's tool call ran once: the results count up without a repeat.
    results = [s["tool_calls"][0]["result"]["content"][0]["text"] for s in done["steps"][:ROUNDS]]
    assert results == [str(n) for n in range(1, ROUNDS + 1)]
    assert (
        await asyncio.to_thread(lambda: RunStep.objects.filter(run_id=run["id"]).count())
        == ROUNDS + 1
    )
    assert await asyncio.to_thread(lambda: Run.objects.get(pk=run["id"]).status) == "succeeded"


async def test_sigterm_finishes_the_current_round_and_leaves_the_run_resumable(
    tmp_path, llm, alice_provider, alice_endpoint, alice_hub_token
):
    _slow_counter(llm)
    redis = start_redis(port := free_port(), tmp_path)
    redis_url = f"redis://127.0.0.1:{port}/0"
    hub = start_private_hub(
        tmp_path / "hub", redis_url=redis_url
    )  # the default 40 s: no sweep can be what ends it
    try:
        async with Api(hub.base_url, alice_hub_token) as api:
            run = await start_run(api, task="Count slowly", servers=["echo"])
            await wait_run(api, run["id"], until=("running",), rounds=2)
            worker = hub.processes[1]
            os.kill(worker.pid, signal.SIGTERM)  # the Celery process only, as a deploy's stop does
            stopped = await wait_run(api, run["id"], until=("interrupted",), timeout=20)
            await asyncio.to_thread(worker.wait, 30)
            await _next_worker(hub, tmp_path / "hub", redis_url)
            done = await _resume(api, run["id"])
    finally:
        stop(hub.processes)
        redis.kill()
        redis.wait()

    assert "shut down" in stopped["error"]
    # The round in flight at SIGTERM was completed and saved, not lost.
    assert [s["round"] for s in stopped["steps"]] == list(range(1, stopped["rounds"] + 1))
    assert done["status"] == "succeeded", done["error"]
    results = [s["tool_calls"][0]["result"]["content"][0]["text"] for s in done["steps"][:ROUNDS]]
    assert results == [str(n) for n in range(1, ROUNDS + 1)]
