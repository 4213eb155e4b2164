"""A run's WebSocket numbers its events and a client that resumes after the last round it shows
misses nothing and gets nothing twice; charlie's socket on alice's run is refused.

Most tests drive the consumer in this process through the hub's WebSocket stack (Channels'
communicator) and play the worker's part with the loop's own `save_step` + `publish`, so races
are set up exactly; the last one watches a real run on the live hub."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
import websockets
from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.db import connections

from apps.chat.routing import websocket_urlpatterns
from apps.chat.runs import loop, records
from apps.chat.runs.models import Run, RunStep
from tests.chat.conftest import Api, db
from tests.chat.runs.conftest import start_run, wait_run
from tests.chat.runs.test_browser import _slow_adds
from tests.llm_server import Reply
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

APP = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))  # the websocket side of mcphub.asgi
WAIT = 5.0


@pytest.fixture(autouse=True)
def _close_socket_db_connections():
    """The consumers query on their own threads (apps.chat.resumable): close those connections
    after each test, or Postgres refuses to drop the test database at the end."""
    yield
    from apps.chat.resumable import _DB_THREADS

    threads = len(_DB_THREADS._threads)
    if threads:
        barrier = threading.Barrier(threads)  # one close per thread: each waits for all the others

        def close() -> None:
            connections.close_all()
            barrier.wait(timeout=10)

        for future in [_DB_THREADS.submit(close) for _ in range(threads)]:
            future.result()


@pytest.fixture
def patient(monkeypatch) -> None:
    """Live events wait for the client's resume however slow this machine is (the grace would
    otherwise let them through first: then the replay repeats them, as the protocol says)."""
    monkeypatch.setattr("apps.chat.resumable.RESUME_GRACE_SECONDS", 30)


def _run(owner, **fields: Any) -> Run:
    from apps.chat.lease import WORKER  # this test plays the worker holding the run

    return Run.objects.create(
        owner=owner, task="Count", max_rounds=50, status=Run.Status.RUNNING, worker=WORKER, **fields
    )


async def complete_round(run: Run, number: int, *, lost: bool = False) -> dict[str, Any]:
    """What the loop's `_round` does once the model and tools answered: store the step, then
    publish it (best effort: `lost` plays a publish that failed)."""
    step = {
        "round": number,
        "text": f"round {number}",
        "tool_calls": [{"id": f"c{number}", "name": "add", "result": {}}],
        "reasoning": "",
        "finish_reason": "",
    }
    await loop.save_step(
        run.pk, elapsed_s=0.1, **step, input_tokens=10, output_tokens=2, context_chars=100
    )
    payload = {
        **step,
        "input_tokens": 10,
        "output_tokens": 2,
        "context_chars": 100,
        "max_rounds": run.max_rounds,
    }
    if not lost:
        await loop.publish(run.pk, "step", payload)
    return payload


async def finish(run: Run, rounds: int) -> None:
    await db(records.finish)(run.pk, Run.Status.SUCCEEDED, answer="Done")
    await loop.publish(
        run.pk,
        "end",
        {"status": "succeeded", "answer": "Done", "error": "", "rounds": rounds},
        rounds=rounds,
    )


async def connect(run: Run, token: str) -> WebsocketCommunicator:
    socket = WebsocketCommunicator(
        APP, f"/ws/runs/{run.pk}/", headers=[(b"authorization", f"Bearer {token}".encode())]
    )
    connected, code = await socket.connect(timeout=WAIT)
    assert connected, code
    return socket


async def until_end(socket: WebsocketCommunicator) -> list[dict[str, Any]]:
    events = []
    while not events or events[-1]["type"] != "end":
        events.append(await socket.receive_json_from(timeout=WAIT))
    return events


def steps(events: list[dict[str, Any]]) -> list[int]:
    return [e["seq"] for e in events if e["type"] == "step"]


async def test_resume_after_n_replays_the_later_steps_then_the_end(alice, alice_hub_token):
    run = await db(_run)(alice)
    live = [await complete_round(run, n) for n in range(1, 6)]
    await finish(run, 5)

    socket = await connect(run, alice_hub_token)
    await socket.send_json_to({"type": "resume", "payload": {"after": 2}})
    events = await until_end(socket)
    assert await socket.receive_nothing(timeout=0.3)
    await socket.disconnect()

    assert [(e["type"], e["seq"]) for e in events] == [
        ("step", 3),
        ("step", 4),
        ("step", 5),
        ("end", 5),
    ]
    assert [e["payload"] for e in events[:3]] == live[2:]  # the live event's payload, read back
    assert events[-1]["payload"] == {
        "status": "succeeded",
        "answer": "Done",
        "error": "",
        "rounds": 5,
    }


async def test_a_client_connected_mid_run_misses_nothing_and_gets_nothing_twice(
    alice, alice_hub_token, patient
):
    run = await db(_run)(alice)
    for n in (1, 2, 3):
        await complete_round(run, n)
    socket = await connect(run, alice_hub_token)
    await complete_round(run, 4)  # arrives live while the socket waits for the client's resume
    await socket.send_json_to({"type": "resume", "payload": {"after": 1}})
    replay = [await socket.receive_json_from(timeout=WAIT) for _ in range(4)]
    await loop.publish(
        run.pk, "approval_required", {"id": "c5", "name": "add", "arguments": {}}, rounds=4
    )
    await complete_round(run, 5)
    await finish(run, 5)
    events = replay + await until_end(socket)
    assert await socket.receive_nothing(timeout=0.3)
    await socket.disconnect()

    assert [(e["type"], e["seq"]) for e in events] == [
        ("step", 2),
        ("step", 3),
        ("step", 4),
        ("status", 4),
        ("approval_required", 4),
        ("step", 5),
        ("end", 5),
    ]
    assert replay[3]["payload"] == {"status": "running", "round": 4}


async def test_a_resume_racing_a_fast_run_has_no_gap_and_no_repeat(alice, alice_hub_token, patient):
    run = await db(_run)(alice)

    async def work() -> None:
        for n in range(1, 41):
            await complete_round(run, n)
        await finish(run, 40)

    worker = asyncio.create_task(work())
    await eventually_async(db(lambda: run.steps.count() >= 5), interval=0.01)
    socket = await connect(run, alice_hub_token)
    await socket.send_json_to({"type": "resume", "payload": {"after": 3}})
    events = await until_end(socket)
    await worker
    await socket.disconnect()

    assert steps(events) == list(range(4, 41))  # strictly increasing, none missing
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    assert events[-1]["seq"] == 40 and [e for e in events if e["type"] == "end"] == [events[-1]]


async def test_a_waiting_run_replays_its_pending_calls_once(alice, alice_hub_token, patient):
    pending = [
        {"id": "c1", "name": "delete", "arguments": {"x": 1}},
        {"id": "c2", "name": "delete", "arguments": {}},
    ]
    run = await db(_run)(alice)
    await complete_round(run, 1)
    await db(Run.objects.filter(pk=run.pk).update)(
        status=Run.Status.WAITING_APPROVAL, pending_approvals=pending
    )
    socket = await connect(run, alice_hub_token)
    await loop.publish(
        run.pk, "approval_required", pending[1], rounds=1
    )  # held; the replay sends it too
    await socket.send_json_to({"type": "resume", "payload": {}})
    events = [await socket.receive_json_from(timeout=WAIT) for _ in range(3)]
    assert await socket.receive_nothing(timeout=0.5)
    await socket.disconnect()

    assert [(e["type"], e["seq"]) for e in events] == [
        ("step", 1),
        ("approval_required", 1),
        ("approval_required", 1),
    ]
    assert [e["payload"] for e in events[1:]] == pending


async def test_a_step_whose_event_was_lost_is_read_back_before_the_next_event(
    alice, alice_hub_token
):
    run = await db(_run)(alice)
    socket = await connect(run, alice_hub_token)
    await socket.send_json_to({"type": "resume", "payload": {"after": 0}})
    assert (await socket.receive_json_from(timeout=WAIT))["type"] == "status"
    await complete_round(run, 1, lost=True)
    await complete_round(run, 2, lost=True)
    await finish(run, 2)
    events = await until_end(socket)
    await socket.disconnect()

    assert [(e["type"], e["seq"]) for e in events] == [("step", 1), ("step", 2), ("end", 2)]


@pytest.mark.parametrize(
    "frame, accepted",
    [
        ("not json", False),
        (json.dumps({"type": "cancel"}), True),
        (json.dumps(["resume"]), True),
        (json.dumps({"type": "resume", "payload": [1]}), False),
        (json.dumps({"type": "resume", "payload": {"after": -1}}), False),
        (json.dumps({"type": "resume", "payload": {"after": "3"}}), False),
        (json.dumps({"type": "resume", "payload": {"after": True}}), False),
    ],
)
async def test_a_malformed_message_gets_an_error_and_changes_nothing(
    alice, alice_hub_token, frame, accepted
):
    run = await db(_run)(alice)
    await complete_round(run, 1)
    socket = await connect(run, alice_hub_token)
    await socket.send_to(text_data=frame)
    error = await socket.receive_json_from(timeout=WAIT)
    await socket.send_to(bytes_data=b"\x00")
    binary = await socket.receive_json_from(timeout=WAIT)
    assert await socket.receive_nothing(timeout=0.3)
    await socket.disconnect()

    assert (
        error["type"] == "error" and error["seq"] is None and error["payload"]["code"] == "invalid"
    )
    assert ("send one of resume" in error["payload"]["message"]) is accepted
    assert binary == {
        "type": "error",
        "seq": None,
        "payload": {"message": "Send JSON text frames.", "code": "invalid"},
    }
    after = await db(Run.objects.get)(pk=run.pk)
    assert (after.status, after.rounds, await db(RunStep.objects.count)()) == ("running", 1, 1)


async def test_charlie_cannot_watch_alices_run(alice, charlie_hub_token, alice_hub_token):
    run = await db(_run)(alice)
    for headers in (
        [(b"authorization", f"Bearer {charlie_hub_token}".encode())],
        [(b"authorization", b"Bearer nope")],
        [],
    ):
        socket = WebsocketCommunicator(APP, f"/ws/runs/{run.pk}/", headers=headers)
        assert await socket.connect(timeout=WAIT) == (False, 4403)
    mine = await connect(run, alice_hub_token)  # the same run, its owner: accepted
    await complete_round(run, 1)
    assert (await mine.receive_json_from(timeout=WAIT))["seq"] == 1
    await mine.disconnect()


async def test_a_page_that_reconnects_mid_run_on_the_live_hub_misses_nothing(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    _slow_adds(llm, delay=0.15)
    slow = llm.responder
    llm.responder = lambda body: (
        slow(body) if sum(m["role"] == "tool" for m in body["messages"]) < 8 else Reply(text=["8"])
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Count to 8", servers=["echo"])
        await wait_run(api, run["id"], until=("running", "succeeded"), rounds=2)
        url = hub.url(f"/ws/runs/{run['id']}/").replace("http://", "ws://")
        async with websockets.connect(
            url, additional_headers={"Authorization": f"Bearer {alice_hub_token}"}
        ) as ws:
            await ws.send(json.dumps({"type": "resume", "payload": {"after": 1}}))
            events: list[dict[str, Any]] = []
            while not events or events[-1]["type"] != "end":
                events.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
        done = await wait_run(api, run["id"])

    assert done["status"] == "succeeded" and done["rounds"] == 9
    assert steps(events) == list(range(2, 10))
    assert events[-1] == {
        "type": "end",
        "seq": 9,
        "payload": {"status": "succeeded", "answer": "8", "error": "", "rounds": 9},
    }
