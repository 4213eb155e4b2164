"""A Redis restart (SIGKILL, back 2 s later) in the middle of runs and chat turns fails none of them:
they wait and go on, the clients get every step / event and the `end` (live, or replayed when the
page reconnects as it does), later turns on the same processes work (no stale pooled connection),
and the worker's log has a line per outage, not a traceback per event."""

from __future__ import annotations

import asyncio
import json

import pytest
import websockets
from django.conf import settings

from tests.chat.conftest import Api
from tests.chat.runs.conftest import start_run, wait_run
from tests.live_hub import free_port, start_private_hub, start_redis, stop
from tests.llm_server import Reply

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(240),
    pytest.mark.skipif(not settings.REDIS_URL, reason="a Redis to restart: the production shape"),
]
ROUNDS = 8
COUNT = 4


def _respond(body: dict) -> Reply:
    last = max(i for i, m in enumerate(body["messages"]) if m["role"] == "user")
    done = sum(1 for m in body["messages"][last:] if m["role"] == "tool")
    if done < ROUNDS:
        return Reply(tool_calls=[(f"c{done + 1}", "echo", {"text": f"r{done + 1}"})], delay=0.5)
    return Reply(text=[f"done after {done}"], delay=0.5)


async def _follow_turn(hub, api: Api, token: str) -> list[dict]:
    """A chat page's view of one turn: reconnects with `resume` after the last seq it saw."""
    conversation = await api.new_conversation()
    url = hub.url(f"/ws/chat/{conversation}/").replace("http://", "ws://")
    events: list[dict] = []
    sent = False
    while not events or events[-1]["type"] != "end":
        try:
            async with websockets.connect(
                url, additional_headers={"Authorization": f"Bearer {token}"}
            ) as ws:
                if not sent:
                    await ws.send(json.dumps({"type": "message", "payload": {"text": "count"}}))
                    sent = True
                else:
                    after = max((e["seq"] for e in events if e["seq"] is not None), default=0)
                    await ws.send(json.dumps({"type": "resume", "payload": {"after": after}}))
                while not events or events[-1]["type"] != "end":
                    events.append(json.loads(await asyncio.wait_for(ws.recv(), 60)))
        except (OSError, websockets.ConnectionClosed):
            await asyncio.sleep(0.5)
    return events


async def test_runs_and_turns_survive_a_redis_restart(
    tmp_path, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.responder = _respond
    redis = start_redis(port := free_port(), tmp_path)
    hub = start_private_hub(tmp_path / "hub", redis_url=f"redis://127.0.0.1:{port}/0")
    try:
        async with Api(hub.base_url, alice_hub_token) as api:
            runs = [await start_run(api, task=f"count {i}", servers=["echo"]) for i in range(COUNT)]
            turns = asyncio.gather(*(_follow_turn(hub, api, alice_hub_token) for _ in range(COUNT)))
            await wait_run(api, runs[0]["id"], until=("running",), rounds=2)
            redis.kill()
            redis.wait()
            await asyncio.sleep(2.0)
            redis = start_redis(port, tmp_path)
            done = [await wait_run(api, run["id"], timeout=90) for run in runs]
            followed = await asyncio.wait_for(turns, 90)
            # Afterwards: a new turn on the same processes (pooled connections) ends as usual.
            again = await asyncio.wait_for(_follow_turn(hub, api, alice_hub_token), 60)
    finally:
        stop(hub.processes)
        redis.kill()
        redis.wait()

    assert [r["status"] for r in done] == ["succeeded"] * COUNT, [r["error"] for r in done]
    assert all([s["round"] for s in r["steps"]] == list(range(1, ROUNDS + 2)) for r in done)
    for events in [*followed, again]:
        seqs = [e["seq"] for e in events if e["seq"] is not None]
        assert seqs == list(range(1, len(seqs) + 1))  # none lost, none twice
        assert events[-1]["payload"]["status"] == "complete"
    log = (tmp_path / "hub" / "worker.log").read_text()
    assert log.count("Traceback") <= 1, log[-3000:]
    # One line per outage from each part of the worker that noticed it, not one per retry.
    assert log.count("pool worker lost Redis") == 1 and "heartbeat failed" not in log
    assert log.count("channel layer: Redis unreachable") <= 1
