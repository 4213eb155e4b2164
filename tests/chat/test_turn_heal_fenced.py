"""A chat turn is fenced as run steps are: once a live worker took it over, the worker that stalled
past its lease writes nothing more of it (no round, no event, not its end) and stops there: it
neither sends the round's call to a tool that changes data again nor asks the model for the next
round. Production shape: real Celery workers on a private Redis; the scripted model holds one reply
back (the stall); the backend writes down every call it receives, so a repeat cannot hide."""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.conf import settings

from apps.chat.models import Event, Message, Turn
from tests.chat.conftest import Api, chat_socket, db
from tests.chat.healing import start_cluster, worker_name, workers_ready
from tests.chat.runs.test_heal_no_repeats import ledger  # noqa: F401 - the fixture
from tests.live_hub import hub_env, start_worker
from tests.llm_server import Reply
from tests.waiting import eventually_async

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(240),
    pytest.mark.skipif(
        not settings.REDIS_URL, reason="Celery workers to take over need the production shape"
    ),
]
ENTRIES = 4
STALLED = 2  # the model's first answer after this many tool results is held back


class Recorder:
    """Records e1..e4 with the ledger's `record` (not read-only), one call per round; its first
    answer after STALLED results waits for `release`: the worker that asked holds the turn without
    writing anything while its lease goes stale."""

    def __init__(self) -> None:
        self.release, self.held = threading.Event(), threading.Event()
        self.asked: list[int] = []  # per model request, how many results it had

    def __call__(self, body: dict) -> Reply:
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        self.asked.append(done)
        if done == STALLED and not self.held.is_set():
            self.held.set()
            self.release.wait(150)
        if done < ENTRIES:
            return Reply(tool_calls=[(f"c{done + 1}", "record", {"entry": f"e{done + 1}"})])
        return Reply(text=["Recorded them all"])


async def test_a_worker_that_lost_its_turn_writes_nothing_more_of_it(
    tmp_path,
    llm,
    alice_provider,
    alice_endpoint,
    alice_hub_token,
    ledger,  # noqa: F811 - the fixture imported above
):
    llm.responder = model = Recorder()
    # The stalling worker renews its leases once an hour: its turn's lease goes stale while it
    # waits for the model, as when its process hangs.
    cluster = start_cluster(tmp_path, workers=1, MCPHUB_RUN_HEARTBEAT_SECONDS="3600")
    try:
        await workers_ready(cluster, 1)
        stalling = cluster.workers[0]
        async with Api(cluster.hub.base_url, alice_hub_token) as api:
            conversation = await api.new_conversation()
        async with chat_socket(cluster.hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "Record the entries"})
            assert await asyncio.to_thread(model.held.wait, 90)
            turn = await db(lambda: Turn.objects.get(conversation_id=conversation))()
            assert turn.worker == worker_name(stalling)
            # A live worker (the usual heartbeat) takes the stale turn over and ends it.
            env = hub_env(MCPHUB_DATA_DIR=str(cluster.log_dir), REDIS_URL=cluster.redis_url)
            live = start_worker(env, cluster.log_dir, name="live")
            cluster.hub.processes.append(live)
            await chat.until("status", timeout=120, state="recovering")
            end = await chat.until("end", timeout=60)
            assert end["payload"]["status"] == "complete"
            stored = await db(lambda: Event.objects.filter(conversation_id=conversation).count())()

            # The stalled worker gets its answer now: what it would write of it is fenced off.
            asked = len(model.asked)
            model.release.set()
            log = cluster.log_dir / "worker.log"
            await eventually_async(
                lambda: "was taken over by another worker" in log.read_text(),
                timeout=30,
                what="the stalled worker to notice it lost the turn",
            )
            await asyncio.sleep(2.0)  # what it would still do, it would have done by now
            stalled_log = log.read_text()
    finally:
        cluster.stop()

    # The call the stalled worker's answer asked for was sent once (by the live worker) ...
    assert ledger.read_text().split() == [f"e{n}" for n in range(1, ENTRIES + 1)]
    # ... the stalled worker asked the model nothing more, stored nothing, ended nothing.
    assert model.asked[asked:] == []
    events = await db(lambda: list(Event.objects.filter(conversation_id=conversation)))()
    assert len(events) == stored
    assert [e.type for e in events].count("end") == 1
    turn = await db(lambda: Turn.objects.get(conversation_id=conversation))()
    assert (turn.status, turn.worker) == ("complete", worker_name(live))
    rounds = await db(
        lambda: Message.objects.filter(turn=turn, role=Message.Role.ASSISTANT).count()
    )()
    assert rounds == ENTRIES + 1  # each round stored once
    results = [e["payload"]["content"][0]["text"] for e in chat.of("tool_result")]
    assert results == [f"recorded e{n}" for n in range(1, ENTRIES + 1)]
    # The model was asked once per round, the stalled round twice (its new worker asked again).
    assert sorted(model.asked) == sorted([*range(ENTRIES + 1), STALLED])
    assert "Traceback" not in stalled_log, stalled_log[-3000:]
