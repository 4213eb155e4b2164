"""A worker lost mid-run (SIGKILL) or stopped (SIGTERM): its runs continue on a live worker from
their last stored step, within seconds and without anyone resuming them; no step and no tool call
is repeated. Production shape: real Celery workers on a private Redis, the scripted model."""

from __future__ import annotations

import asyncio
import signal

import pytest
from django.conf import settings

from apps.chat.runs.models import Run
from tests.chat.conftest import Api, db
from tests.chat.healing import ROUNDS, Counter, start_cluster, worker_name, workers_ready
from tests.chat.runs.conftest import start_run, wait_run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        not settings.REDIS_URL, reason="Celery workers to kill need the production shape"
    ),
]


def _assert_counted_once(done: dict) -> None:
    assert done["status"] == "succeeded", done["error"]
    assert done["answer"] == f"Counted to {ROUNDS}"
    assert [s["round"] for s in done["steps"]] == list(range(1, ROUNDS + 2))
    # Each round's call ran once: the results count up without a gap or a repeat.
    results = [s["tool_calls"][0]["result"]["content"][0]["text"] for s in done["steps"][:ROUNDS]]
    assert results == [str(n) for n in range(1, ROUNDS + 1)]


async def _runs_on(worker, run_ids: list[str]) -> list[str]:
    name = worker_name(worker)
    held = await db(
        lambda: set(
            map(str, Run.objects.filter(pk__in=run_ids, worker=name).values_list("pk", flat=True))
        )
    )()
    return [r for r in run_ids if r in held]


async def test_a_killed_workers_runs_continue_on_the_live_worker_within_seconds(
    tmp_path, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.responder = counter = Counter()
    cluster = start_cluster(tmp_path, workers=2)
    try:
        await workers_ready(cluster, 2)
        async with Api(cluster.hub.base_url, alice_hub_token) as api:
            runs = [
                (await start_run(api, task=f"Count slowly #{n}", servers=["echo"]))["id"]
                for n in range(6)
            ]
            for run_id in runs:
                await wait_run(api, run_id, until=("running",), rounds=2)
            counts = [(len(await _runs_on(w, runs)), w) for w in cluster.workers]
            victim = max(counts, key=lambda pair: pair[0])[1]
            moved = await _runs_on(victim, runs)
            tasks = {r: (await api.client.get(f"/runs/{r}/")).json()["task"] for r in moved}
            killed_at = cluster.kill(victim)
            done = [await wait_run(api, run_id, timeout=90) for run_id in runs]
    finally:
        cluster.stop()

    assert moved, "the killed worker ran none of the runs"
    for run in done:
        _assert_counted_once(run)
    # Nobody resumed anything: the live worker took the runs over (each recovery it counted was
    # reset by the rounds they completed since).
    recovered = await db(
        lambda: dict(Run.objects.filter(pk__in=moved).values_list("pk", "recoveries"))
    )()
    assert all(n == 0 for n in recovered.values())
    gaps = [counter.next_round_after(tasks[r], killed_at) for r in moved]
    print(f"SIGKILL, 2 workers: {len(moved)} runs moved; seconds to their next round: {gaps}")
    assert all(gap is not None and gap < 30 for gap in gaps)  # did not hang (target: ≤ 5 s)


async def test_a_killed_lone_worker_s_runs_continue_when_its_replacement_starts(
    tmp_path, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.responder = counter = Counter()
    cluster = start_cluster(tmp_path, workers=1)
    try:
        async with Api(cluster.hub.base_url, alice_hub_token) as api:
            run = await start_run(api, task="Count slowly alone", servers=["echo"])
            await wait_run(api, run["id"], until=("running",), rounds=3)
            killed_at = cluster.kill(cluster.workers[0])
            cluster.workers[0].wait()
            del cluster.hub.processes[1]
            cluster.add_worker("worker-replacement")  # as a supervisor restarts it, at once
            done = await wait_run(api, run["id"], timeout=90)
    finally:
        cluster.stop()

    _assert_counted_once(done)
    gap = counter.next_round_after("Count slowly alone", killed_at)
    print(f"SIGKILL, 1 worker restarted at once: next round {gap:.2f} s after the kill")
    assert gap is not None and gap < 90


async def test_sigterm_hands_the_runs_over_at_once_after_their_round(
    tmp_path, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.responder = counter = Counter()
    cluster = start_cluster(tmp_path, workers=2)
    try:
        await workers_ready(cluster, 2)
        async with Api(cluster.hub.base_url, alice_hub_token) as api:
            runs = [
                (await start_run(api, task=f"Count on #{n}", servers=["echo"]))["id"]
                for n in range(4)
            ]
            for run_id in runs:
                await wait_run(api, run_id, until=("running",), rounds=2)
            counts = [(len(await _runs_on(w, runs)), w) for w in cluster.workers]
            leaving = max(counts, key=lambda pair: pair[0])[1]
            moved = await _runs_on(leaving, runs)
            tasks = [(await api.client.get(f"/runs/{r}/")).json()["task"] for r in moved]
            stopped_at = cluster.kill(leaving, signal.SIGTERM)
            done = [await wait_run(api, run_id, timeout=90) for run_id in runs]
            await asyncio.to_thread(leaving.wait, 60)
    finally:
        cluster.stop()

    assert moved
    for run in done:
        _assert_counted_once(run)
    gaps = [counter.next_round_after(task, stopped_at) for task in tasks]
    print(f"SIGTERM, 2 workers: {len(moved)} runs handed over; seconds to their next round: {gaps}")
    # Handed over, not found lost: the live worker took them without waiting for a stale lease.
    assert all(gap is not None and gap < settings.MCPHUB_RUN_STALE_SECONDS + 10 for gap in gaps)
