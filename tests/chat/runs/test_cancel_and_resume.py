"""Alice cancels a run mid-tool-call, and resumes one that failed; charlie can touch none of it."""

from __future__ import annotations

import asyncio

import pytest

from apps.chat.runs.models import Run
from tests.chat.conftest import Api, db
from tests.chat.runs.conftest import start_run, wait_run
from tests.live_hub import mcp_client
from tests.llm_server import Reply
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


async def _cancellations(hub, endpoint, token) -> int:
    async with mcp_client(hub.url(endpoint.path), token) as client:
        result = await client.call_tool("cancellations", {})
    return int(result.content[0].text)


async def test_cancel_stops_the_tool_call_in_flight(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    before = await _cancellations(hub, alice_endpoint, alice_hub_token)
    llm.script(
        [
            Reply(tool_calls=[("c1", "echo", {"text": "first"})]),
            Reply(tool_calls=[("c2", "slow", {"seconds": 30})]),
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Be slow")
        await wait_run(api, run["id"], until=("running",), rounds=1)
        await asyncio.sleep(1.0)  # the slow call reaches the backend (nothing to watch for it)
        response = await api.client.post(f"/runs/{run['id']}/cancel/")
        assert response.status_code == 200, response.text
        done = await wait_run(api, run["id"], timeout=10)
        again = await api.client.post(f"/runs/{run['id']}/cancel/")

    assert done["status"] == "cancelled"
    assert done["rounds"] == 1  # the round cut short is not a completed step
    assert again.status_code == 409

    async def cancelled() -> bool:
        return await _cancellations(hub, alice_endpoint, alice_hub_token) > before

    await eventually_async(cancelled, timeout=5, interval=0.1)
    assert await _cancellations(hub, alice_endpoint, alice_hub_token) == before + 1


async def test_resume_continues_from_the_last_completed_step(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.script(
        [
            Reply(tool_calls=[("c1", "add", {"a": 1, "b": 1})]),
            Reply(tool_calls=[("c2", "add", {"a": 2, "b": 2})]),
            Reply(error=400),
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Add things", servers=["echo"])
        failed = await wait_run(api, run["id"])
        assert failed["status"] == "failed" and failed["rounds"] == 2
        llm.script([Reply(text=["2 and 4"])])
        sent_before = len(llm.requests)
        resumed = await api.client.post(f"/runs/{run['id']}/resume/")
        assert resumed.status_code == 200 and resumed.json()["status"] in (
            "queued",
            "running",
            "succeeded",
        )
        done = await wait_run(api, run["id"])
        twice = await api.client.post(f"/runs/{run['id']}/resume/")

    assert done["status"] == "succeeded" and done["answer"] == "2 and 4"
    assert [s["round"] for s in done["steps"]] == [1, 2, 3]
    # One model request after resuming, rebuilt from the two completed steps (no tool was called again).
    assert len(llm.requests) == sent_before + 1
    results = [m["content"] for m in llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert results == ["2", "4"]
    assert twice.status_code == 409


async def test_charlie_cannot_see_cancel_or_resume_alices_run(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token, charlie_hub_token
):
    llm.script([Reply(error=400)])
    async with Api(hub.base_url, alice_hub_token) as alice_api:
        run = await start_run(alice_api, task="Alice's secret task")
        await wait_run(alice_api, run["id"])
    async with Api(hub.base_url, charlie_hub_token) as api:
        listed = (await api.client.get("/runs/")).json()
        detail = await api.client.get(f"/runs/{run['id']}/")
        cancel = await api.client.post(f"/runs/{run['id']}/cancel/")
        resume = await api.client.post(f"/runs/{run['id']}/resume/")
    assert listed["count"] == 0 if isinstance(listed, dict) else listed == []
    assert [r.status_code for r in (detail, cancel, resume)] == [404, 404, 404]
    assert await db(lambda: Run.objects.get(pk=run["id"]).status)() == "failed"


async def test_a_call_that_needs_approval_waits_for_alices_answer(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    alice_endpoint.approval = "all"
    await db(alice_endpoint.save)()
    llm.script(
        [
            Reply(tool_calls=[("c1", "echo", {"text": "allowed"})]),
            Reply(tool_calls=[("c2", "echo", {"text": "denied"})]),
            Reply(text=["One ran, one was denied"]),
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Echo twice")
        waiting = await wait_run(api, run["id"], until=("waiting_approval",))
        assert [p["id"] for p in waiting["pending_approvals"]] == ["c1"]
        wrong = await api.client.post(
            f"/runs/{run['id']}/approve/", json={"call_id": "c9", "allow": True}
        )
        assert wrong.status_code == 409
        assert (
            await api.client.post(
                f"/runs/{run['id']}/approve/", json={"call_id": "c1", "allow": True}
            )
        ).status_code == 200
        await wait_run(api, run["id"], until=("waiting_approval",), rounds=1)
        assert (
            await api.client.post(
                f"/runs/{run['id']}/approve/", json={"call_id": "c2", "allow": False}
            )
        ).status_code == 200
        done = await wait_run(api, run["id"])

    assert done["status"] == "succeeded" and done["pending_approvals"] == []
    first, second = (s["tool_calls"][0] for s in done["steps"][:2])
    assert first["result"]["content"][0]["text"] == "allowed" and first["isError"] is False
    assert second["isError"] is True and "denied" in second["result"]["content"][0]["text"]
