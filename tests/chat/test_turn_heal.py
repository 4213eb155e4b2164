"""A chat turn whose worker is SIGKILLed (or stopped with SIGTERM, which hands it over at once)
continues on the live worker: the open socket hears "recovering…" within seconds, then the rest of
the turn, and the user never sends again. Production shape: two real Celery workers on a private
Redis, the scripted model."""

from __future__ import annotations

import signal
import time

import pytest
from django.conf import settings

from apps.chat.models import Turn
from tests.chat.conftest import Api, chat_socket, db
from tests.chat.healing import ROUNDS, Counter, start_cluster, worker_name, workers_ready

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        not settings.REDIS_URL, reason="Celery workers to kill need the production shape"
    ),
]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
async def test_a_lost_workers_turn_continues_and_its_socket_hears_it_recovering(
    sig, tmp_path, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.responder = counter = Counter()
    cluster = start_cluster(tmp_path, workers=2)
    try:
        await workers_ready(cluster, 2)
        async with Api(cluster.hub.base_url, alice_hub_token) as api:
            conversation = await api.new_conversation()
        async with chat_socket(cluster.hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "Count slowly in chat"})
            await chat.until("tool_result")
            await chat.until("tool_result")
            holder = await db(lambda: Turn.objects.get(conversation_id=conversation).worker)()
            victim = next(w for w in cluster.workers if worker_name(w) == holder)
            killed_at = cluster.kill(victim, sig)
            recovering = await chat.until("status", timeout=60, state="recovering")
            heard_after = time.monotonic() - killed_at
            end = await chat.until("end", timeout=60)
    finally:
        cluster.stop()

    print(f"chat turn, {sig.name}, 2 workers: 'recovering' heard {heard_after:.2f} s after it")
    assert "Recovering" in recovering["payload"]["message"]
    assert heard_after < 30  # did not hang (target: ≤ 5 s)
    assert end["payload"]["status"] == "complete"
    assert chat.text().endswith(f"Counted to {ROUNDS}")
    # Every call answered once, in order: none lost, none repeated.
    results = [e["payload"]["content"][0]["text"] for e in chat.of("tool_result")]
    assert results == [str(n) for n in range(1, ROUNDS + 1)]
    assert [e["payload"]["id"] for e in chat.of("tool_call")] == [
        f"c{n}" for n in range(1, ROUNDS + 1)
    ]
    # One user message, sent once; the stream's numbers have no gap and no repeat.
    assert len(chat.of("user_message")) == 1
    numbers = [e["seq"] for e in chat.events if e["seq"] is not None]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    assert counter.next_round_after("Count slowly in chat", killed_at) is not None
