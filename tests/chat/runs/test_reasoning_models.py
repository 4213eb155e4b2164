"""Runs with reasoning models, models that sign their tool calls, answers cut at the output limit
and refusals, as each product sends them, through the real hub: two tool calls, then the answer."""

from __future__ import annotations

import pytest

from apps.chat.runs.context import CONTINUE
from tests.chat.runs.conftest import Api, start_run, wait_run
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


async def test_a_two_tool_run(hub, llm, flavour, flavour_provider, alice_endpoint, alice_hub_token):
    llm.script(flavour.script_for_run())
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Echo hi and add 2 and 3", servers=["echo"])
        done = await wait_run(api, run["id"])

    assert (done["status"], done["error"]) == (flavour.run_status, flavour.run_error)
    assert done["answer"] == (flavour.answer if flavour.run_answer is None else flavour.run_answer)
    first = done["steps"][0]
    assert [c["result"]["content"][0]["text"] for c in first["tool_calls"]] == ["hi", "5"]
    flavour.sent(llm.requests)
    assert "".join(s["reasoning"] for s in done["steps"]) == flavour.reasoning
    assert all("replay" not in s and "extra_content" not in str(s) for s in done["steps"])
    if (
        flavour.run_replies is not None
    ):  # the cut answer was continued: the model was asked to go on
        assert llm.requests[2]["messages"][-1] == {"role": "user", "content": CONTINUE}
        assert [s["finish_reason"] for s in done["steps"]] == ["", "length", ""]


async def test_an_answer_cut_every_time_ends_the_run_incomplete(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.script([Reply(text=[f"part {n}. "], finish="length") for n in range(1, 5)])
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Write a long essay", servers=["echo"])
        done = await wait_run(api, run["id"], until=("incomplete", "succeeded", "failed"))
        assert done["status"] == "incomplete"
        assert (
            done["answer"] == "part 1. part 2. part 3. part 4. "
        )  # one cut answer, then 3 continuations
        assert "cut at the model's output limit" in done["error"]
        # Resuming lets it go on once more, and it may finish.
        llm.script([Reply(text=["The end."])])
        resumed = await api.client.post(f"/runs/{run['id']}/resume/")
        assert resumed.status_code == 200, resumed.text
        done = await wait_run(api, run["id"], until=("succeeded", "failed", "incomplete"), rounds=5)

    assert done["status"] == "succeeded"
    assert done["answer"] == "part 1. part 2. part 3. part 4. The end."
