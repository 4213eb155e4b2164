"""Alice hands a task to a run: the model works through her echo server's tools, round after round."""

from __future__ import annotations

import pytest

from apps.chat.runs.models import RunStep
from tests.chat.conftest import Api, db
from tests.chat.runs.conftest import start_run, wait_run
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def counting(llm, rounds: int):
    """A model that calls `add` for `rounds` rounds, then answers."""

    def respond(body: dict) -> Reply:
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        if done < rounds:
            return Reply(
                tool_calls=[(f"c{done + 1}", "add", {"a": done, "b": 1})],
                text=[f"round {done + 1}"],
            )
        return Reply(text=["Counted to ", str(rounds)])

    llm.responder = respond


async def test_a_20_round_run_persists_every_step(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    counting(llm, 20)
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Count to 20 with add", servers=["echo"])
        assert run["status"] == "queued" and run["max_rounds"] == 10000
        done = await wait_run(api, run["id"])

    assert done["status"] == "succeeded", done["error"]
    assert done["answer"] == "Counted to 20"
    assert done["rounds"] == 21
    assert [s["round"] for s in done["steps"]] == list(range(1, 22))
    first = done["steps"][0]["tool_calls"][0]
    assert first["name"] == "add" and first["arguments"] == {"a": 0, "b": 1}
    assert first["result"]["content"][0]["text"] == "1" and first["isError"] is False
    assert done["steps"][19]["tool_calls"][0]["result"]["content"][0]["text"] == "20"
    assert done["input_tokens"] == sum(s["input_tokens"] for s in done["steps"]) > 0
    # The model saw each earlier result: the 21st request carries 20 tool results.
    assert [m["content"] for m in llm.requests[-1]["messages"] if m["role"] == "tool"][-1] == "20"
    offered = {t["function"]["name"] for t in llm.requests[0]["tools"]}
    assert "echo" in offered and "add" in offered


async def test_bad_input_is_refused_and_changes_nothing(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    async with Api(hub.base_url, alice_hub_token) as api:
        empty = await api.client.post("/runs/", json={"task": "  "})
        unknown = await api.client.post("/runs/", json={"task": "x", "servers": ["nope"]})
        both = await api.client.post(
            "/runs/", json={"task": "x", "servers": ["echo"], "endpoint": "e"}
        )
        rounds = await api.client.post("/runs/", json={"task": "x", "max_rounds": 0})
    assert [r.status_code for r in (empty, unknown, both, rounds)] == [400, 400, 400, 400]
    assert "nope" in unknown.json()["detail"]
    assert await db(RunStep.objects.count)() == 0


async def test_the_round_limit_ends_a_run_that_never_answers(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    counting(llm, 1000)
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Count forever", max_rounds=3)
        done = await wait_run(api, run["id"])
    assert done["status"] == "failed"
    assert "3 rounds" in done["error"]
    assert done["rounds"] == 3


async def test_a_run_over_the_endpoints_budget_gets_the_tools_search_ranks_for_its_task(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    from apps.catalog.models import Tool

    tools = await db(
        lambda: dict(Tool.objects.filter(server__name="echo").values_list("name", "token_estimate"))
    )()
    alice_endpoint.token_budget = tools["add"] + tools["echo"] + 10
    await db(alice_endpoint.save)()
    llm.script([Reply(text=["5"])])
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="add two numbers: add 2 and 3")
        done = await wait_run(api, run["id"])
    assert done["status"] == "succeeded"
    offered = {t["function"]["name"] for t in llm.requests[-1]["tools"]}
    assert "add" in offered and len(offered) < len(tools)
    assert sum(tools[name] for name in offered) <= alice_endpoint.token_budget
