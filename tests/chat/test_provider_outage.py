"""A model provider that goes away for a few seconds, answers 5xx or rate-limits: runs and chat turns
wait it out, saying "Waiting for the model provider" with the last error, and go on by themselves
once it is back. Past the wait (the live hub's MCPHUB_RUN_PROVIDER_WAIT / MCPHUB_CHAT_PROVIDER_WAIT:
15 s / 10 s) the run fails with a Resume that works. The scripted LLM is really stopped and
restarted on its port."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.chat.conftest import Api, chat_socket
from tests.chat.runs.conftest import start_run, wait_run
from tests.llm_server import Reply
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

TOOLS = Reply(tool_calls=[("c1", "echo", {"text": "hi"})])
ANSWER = Reply(text=["echo said hi"])
WAITING = "Waiting for the model provider"


async def _waiting_error(api: Api, run_id: str) -> str:
    """The run's `error` once it says it waits for the provider (the run still running)."""

    async def said() -> str | None:
        run = (await api.client.get(f"/runs/{run_id}/")).json()
        return run["error"] if run["status"] == "running" and WAITING in run["error"] else None

    return await eventually_async(said, timeout=20, interval=0.1, what="the run to say it waits")


async def test_a_run_waits_out_a_provider_down_for_5_s_and_goes_on_by_itself(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.script([TOOLS, ANSWER])
    llm.down()
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Use echo", servers=["echo"])
        said = await _waiting_error(api, run["id"])
        await asyncio.sleep(max(0.0, 5 - 1))  # down ~5 s in all
        llm.up()
        back = time.monotonic()
        done = await wait_run(api, run["id"])

    assert said.startswith(WAITING) and "Cannot reach the provider" in said
    assert done["status"] == "succeeded" and done["answer"] == "echo said hi"
    assert done["error"] == ""  # the note is gone once the provider answered
    assert [s["round"] for s in done["steps"]] == [1, 2]  # each round once
    assert time.monotonic() - back < 10  # generous "did not hang": backoff is capped at 3 s


async def test_a_run_waits_out_5xx_and_a_rate_limit_with_retry_after_between_rounds(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.script(
        [
            TOOLS,
            Reply(error=503),
            Reply(error=500),
            # Longer than the one quick retry allows (20 s cap) is still honoured when patient.
            Reply(error=429, retry_after=2),
            ANSWER,
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Use echo", servers=["echo"])
        done = await wait_run(api, run["id"])

    assert done["status"] == "succeeded" and done["answer"] == "echo said hi"
    assert len(llm.requests) == 5 and llm.pending == 0


async def test_past_the_wait_a_run_fails_and_resumes_from_its_last_round(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.script([TOOLS])
    llm.responder = lambda body: Reply(error=503, error_message="upstream overloaded")
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Use echo", servers=["echo"])
        failed = await wait_run(api, run["id"], timeout=60)
        llm.responder = None
        llm.script([ANSWER])
        resumed = await api.client.post(f"/runs/{run['id']}/resume/")
        done = await wait_run(api, run["id"])

    assert failed["status"] == "failed"
    assert "after 15 s of waiting" in failed["error"] and "upstream overloaded" in failed["error"]
    assert resumed.status_code == 200, resumed.text
    assert done["status"] == "succeeded" and [s["round"] for s in done["steps"]] == [1, 2]
    # The echo call of round 1 was not made again: the resumed run's history holds its result.
    assert "hi" in str(llm.requests[-1]["messages"])


async def test_a_chat_turn_shows_it_waits_and_answers_once_the_provider_is_back(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.script([ANSWER])
    llm.down()
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "hello"})
            clock = time.monotonic()
            while not any(
                WAITING in (e["payload"].get("message") or "") for e in chat.of("status")
            ):
                await chat.next(10)
            seen_after = time.monotonic() - clock
            await asyncio.sleep(3)
            llm.up()
            end = await chat.until("end")

    assert seen_after < 5  # the user hears of it at once, not when the wait is over
    assert end["payload"]["status"] == "complete" and chat.text() == "echo said hi"
    assert not chat.of("error")
