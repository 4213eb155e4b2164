"""A run stops when its token budget or its wall time runs out, keeping what it completed."""

from __future__ import annotations

import pytest

from tests.chat.conftest import Api
from tests.chat.runs.conftest import start_run, wait_run
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]


def _forever(llm, delay: float = 0.0) -> None:
    def respond(body: dict) -> Reply:
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        return Reply(
            tool_calls=[(f"c{done}", "echo", {"text": "again"})], usage=(100, 10), delay=delay
        )

    llm.responder = respond


async def test_the_token_budget_stops_a_run(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    _forever(llm)
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Loop", token_budget=300)
        done = await wait_run(api, run["id"])
    assert done["status"] == "failed"
    assert "token budget (300)" in done["error"]
    assert done["rounds"] == 3 and done["input_tokens"] + done["output_tokens"] == 330


async def test_the_time_limit_stops_a_run_mid_model_call(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    _forever(llm, delay=0.4)
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Loop slowly", time_limit_s=1)
        done = await wait_run(api, run["id"], timeout=15)
    assert done["status"] == "failed"
    assert "time limit (1 s)" in done["error"]
    assert 1 <= done["rounds"] <= 3
    assert done["elapsed_s"] == pytest.approx(1.0, abs=0.5)
