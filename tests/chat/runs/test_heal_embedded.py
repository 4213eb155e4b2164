"""Embedded (one web process runs everything): the process SIGKILLed mid-run, or stopped with
SIGTERM, and started again; the new process continues the run by itself from its last stored step,
and no step or tool call is repeated."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest
from django.conf import settings

from apps.chat.runs.models import Run
from tests.chat.conftest import Api, db
from tests.chat.healing import ROUNDS, Counter
from tests.chat.runs.conftest import start_run, wait_run
from tests.live_hub import free_port, hub_env, start_private_hub, start_web, stop, wait_healthy

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
    pytest.mark.skipif(bool(settings.REDIS_URL), reason="the embedded shape"),
]


async def _restart(hub, log_dir) -> str:
    port = free_port()
    hub.processes[0] = start_web(
        port, hub_env(embedded=True, MCPHUB_DATA_DIR=str(log_dir)), log_dir, name="web2"
    )
    base_url = f"http://127.0.0.1:{port}"
    await asyncio.to_thread(wait_healthy, base_url, hub.processes)
    return base_url


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
async def test_the_restarted_process_continues_the_run_by_itself(
    sig, tmp_path, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.responder = counter = Counter()
    hub = start_private_hub(tmp_path / "hub", redis_url=None)
    try:
        async with Api(hub.base_url, alice_hub_token) as api:
            run = await start_run(api, task="Count slowly here", servers=["echo"])
            await wait_run(api, run["id"], until=("running",), rounds=3)
        stopped_at = time.monotonic()
        os.killpg(hub.processes[0].pid, sig)
        await asyncio.to_thread(hub.processes[0].wait, 40)
        drained = await db(lambda: Run.objects.get(pk=run["id"]))()
        base_url = await _restart(hub, tmp_path / "hub")
        async with Api(base_url, alice_hub_token) as api:
            done = await wait_run(api, run["id"], timeout=60)  # nobody resumes it
    finally:
        stop(hub.processes)

    assert done["status"] == "succeeded", done["error"]
    assert [s["round"] for s in done["steps"]] == list(range(1, ROUNDS + 2))
    results = [s["tool_calls"][0]["result"]["content"][0]["text"] for s in done["steps"][:ROUNDS]]
    assert results == [str(n) for n in range(1, ROUNDS + 1)]
    if sig == signal.SIGTERM:
        # Drained: the round in flight was completed and stored, and the lease handed over.
        assert drained.status == "running" and drained.worker == ""
    gap = counter.next_round_after("Count slowly here", stopped_at)
    print(f"embedded {sig.name}: next round {gap:.2f} s after the signal (restart included)")
