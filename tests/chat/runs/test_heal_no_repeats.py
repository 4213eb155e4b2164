"""A worker SIGKILLed while a run's call to a tool that changes data is in flight: the run is taken
over and goes on, and the call is never sent again unasked. Where the endpoint's policy runs such a
call unasked, the model is told its outcome is unknown; where the policy asks, the owner is asked
again (and an allowed call is sent again: asked, not a silent repeat). The backend writes down every
call it receives, so a repeat cannot hide."""

from __future__ import annotations

import asyncio
import collections
import sys
from pathlib import Path

import pytest
from django.conf import settings

from apps.catalog.models import McpServer
from apps.chat.runs.models import Run
from apps.toolsets.models import Endpoint
from tests.chat.conftest import Api, db
from tests.chat.healing import start_cluster, worker_name, workers_ready
from tests.chat.runs.conftest import start_run, wait_run
from tests.llm_server import Reply
from tests.waiting import eventually_async

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        not settings.REDIS_URL, reason="Celery workers to kill need the production shape"
    ),
]
SERVERS = Path(__file__).resolve().parents[2] / "servers"
ENTRIES = 4


@pytest.fixture
def ledger(tmp_path, alice_endpoint, hub) -> Path:
    """The ledger server on alice's endpoint; the path of the file it writes each call to."""
    from apps.catalog.introspection import apply_discovery
    from apps.connections.default import run_with_pool
    from apps.toolsets.services import enable_tools

    path = tmp_path / "ledger.txt"
    path.touch()
    server = McpServer.objects.create(
        name="ledger",
        command=sys.executable,
        args=[str(SERVERS / "ledger.py")],
        env={"LEDGER_FILE": str(path)},
    )
    apply_discovery(
        server=server, discovery=run_with_pool(lambda pool: pool.discover(server.to_spec()))
    )
    enable_tools(endpoint=alice_endpoint, tools=server.tools.all())
    path.write_text("")  # discovery calls nothing, but start from an empty ledger regardless
    return path


def _recorder(llm) -> None:
    def respond(body: dict) -> Reply:
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        if done < ENTRIES:
            call = ("r", "record", {"entry": f"e{done + 1}", "seconds": 2.0})
            return Reply(tool_calls=[(f"c{done + 1}", *call[1:])], delay=0.1)
        return Reply(text=["Recorded them all"])

    llm.responder = respond


async def _kill_mid_call(cluster, api: Api, run_id: str, ledger: Path) -> None:
    """Once the second call reached the backend (and its round is not stored), kill its worker."""
    await eventually_async(
        lambda: ledger.read_text().split() == ["e1", "e2"], timeout=60, what="the second call"
    )
    holder = await db(lambda: Run.objects.get(pk=run_id).worker)()
    victim = next(w for w in cluster.workers if worker_name(w) == holder)
    assert (await api.client.get(f"/runs/{run_id}/")).json()["rounds"] == 1
    cluster.kill(victim)


async def test_a_call_that_may_have_run_is_not_repeated_and_the_model_hears_it_is_unknown(
    tmp_path, llm, alice_provider, alice_endpoint, alice_hub_token, ledger
):
    _recorder(llm)
    cluster = start_cluster(tmp_path, workers=2)
    try:
        await workers_ready(cluster, 2)
        async with Api(cluster.hub.base_url, alice_hub_token) as api:
            run = await start_run(api, task="Record four entries", servers=["ledger"])
            await _kill_mid_call(cluster, api, run["id"], ledger)
            done = await wait_run(api, run["id"], timeout=90)
    finally:
        cluster.stop()

    entries = ledger.read_text().split()
    repeats = sum(n - 1 for n in collections.Counter(entries).values())
    print(f"ledger after the kill: {entries}; unasked repeats: {repeats}")
    assert repeats == 0
    assert entries == ["e1", "e2", "e3", "e4"]
    assert done["status"] == "succeeded", done["error"]
    unknown = done["steps"][1]["tool_calls"][0]
    assert unknown["isError"] and "outcome of this call is unknown" in str(unknown["result"])
    # The model was told, and went on with the next entry rather than the same one again.
    assert [s["round"] for s in done["steps"]] == [1, 2, 3, 4, 5]


async def test_where_the_policy_asks_the_owner_is_asked_before_it_is_sent_again(
    tmp_path, llm, alice_provider, alice_endpoint, alice_hub_token, ledger
):
    _recorder(llm)
    await db(lambda: Endpoint.objects.filter(pk=alice_endpoint.pk).update(approval="all"))()
    cluster = start_cluster(tmp_path, workers=2)
    reasons: list[str] = []

    async def approve_all(api: Api, run_id: str) -> dict:
        while True:
            state = (await api.client.get(f"/runs/{run_id}/")).json()
            if state["status"] not in ("queued", "running", "waiting_approval"):
                return state
            for call in state["pending_approvals"]:
                reasons.append(call["reason"])
                await api.client.post(
                    f"/runs/{run_id}/approve/", json={"call_id": call["id"], "allow": True}
                )
            await asyncio.sleep(0.2)

    try:
        await workers_ready(cluster, 2)
        async with Api(cluster.hub.base_url, alice_hub_token) as api:
            run = await start_run(api, task="Record four entries", servers=["ledger"])
            approving = asyncio.create_task(approve_all(api, run["id"]))
            await _kill_mid_call(cluster, api, run["id"], ledger)
            done = await asyncio.wait_for(approving, 90)
    finally:
        cluster.stop()

    assert done["status"] == "succeeded", done["error"]
    asked_again = [r for r in reasons if "may already have run" in r]
    assert asked_again, reasons
    # e2 reached the backend twice, the second time because its owner allowed it: asked, not unasked.
    assert ledger.read_text().split() == ["e1", "e2", "e2", "e3", "e4"]
