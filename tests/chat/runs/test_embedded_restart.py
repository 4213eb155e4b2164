"""Embedded (one web process runs everything): a process SIGKILLed mid-run loses no completed step;
the next process's schedule marks the run interrupted, and resume finishes it without repeats."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from django.conf import settings

from tests.chat.conftest import Api
from tests.chat.runs.conftest import start_run, wait_run
from tests.chat.runs.test_worker_killed import FAST_SWEEP, ROUNDS, _slow_counter
from tests.live_hub import free_port, hub_env, start_private_hub, start_web, stop, wait_healthy

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(150),
    pytest.mark.skipif(bool(settings.REDIS_URL), reason="the embedded shape"),
]


async def test_a_killed_hub_process_leaves_its_run_resumable(
    tmp_path, llm, alice_provider, alice_endpoint, alice_hub_token
):
    _slow_counter(llm)
    extra = {**FAST_SWEEP, "MCPHUB_EMBEDDED_BEAT": "true"}
    hub = start_private_hub(tmp_path / "hub", redis_url=None, **extra)
    try:
        async with Api(hub.base_url, alice_hub_token) as api:
            run = await start_run(api, task="Count slowly", servers=["echo"])
            await wait_run(api, run["id"], until=("running",), rounds=3)
        os.killpg(hub.processes[0].pid, signal.SIGKILL)
        hub.processes[0].wait()
        await asyncio.sleep(3.5)  # its heartbeat goes stale
        port = free_port()
        hub.processes[0] = start_web(
            port,
            hub_env(embedded=True, MCPHUB_DATA_DIR=str(tmp_path / "hub"), **extra),
            tmp_path / "hub",
            name="web2",
        )
        base_url = f"http://127.0.0.1:{port}"
        await asyncio.to_thread(wait_healthy, base_url, hub.processes)
        async with Api(base_url, alice_hub_token) as api:
            interrupted = await wait_run(api, run["id"], until=("interrupted",), timeout=40)
            assert (await api.client.post(f"/runs/{run['id']}/resume/")).status_code == 200
            done = await wait_run(api, run["id"], timeout=60)
    finally:
        stop(hub.processes)

    assert interrupted["rounds"] >= 3
    assert done["status"] == "succeeded", done["error"]
    results = [s["tool_calls"][0]["result"]["content"][0]["text"] for s in done["steps"][:ROUNDS]]
    assert results == [str(n) for n in range(1, ROUNDS + 1)]
