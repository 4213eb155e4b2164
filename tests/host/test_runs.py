"""A run's backend samples: with `ask` the run waits (durably) for Alice to allow it, her model
answers, and the tokens count with the run."""

from __future__ import annotations

import json

import pytest

from apps.chat.runs.models import Run
from apps.toolsets.models import Endpoint
from tests.chat.conftest import Api, db
from tests.chat.runs.conftest import start_run, wait_run
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


async def test_a_run_waits_for_alice_to_allow_sampling_and_counts_its_tokens(
    hub, llm, alice_provider, asker_endpoint, alice_hub_token
):
    await db(Endpoint.objects.filter(pk=asker_endpoint.pk).update)(sampling="ask")
    llm.script(
        [
            Reply(tool_calls=[("c1", "write", {"question": "a haiku"})], usage=(10, 2)),
            Reply(text=["old pond"], usage=(7, 3)),
            Reply(text=["Done: old pond"], usage=(20, 4)),
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Get a haiku written")
        waiting = await wait_run(api, run["id"], until=("waiting_approval",))
        # Kept in the database: a reload or another device shows the same request.
        stored = await db(lambda: Run.objects.get(pk=run["id"]).pending_approvals)()
        [asked] = waiting["pending_approvals"]
        allowed = await api.client.post(
            f"/runs/{run['id']}/approve/", json={"call_id": asked["id"], "allow": True}
        )
        done = await wait_run(api, run["id"])

    assert stored == waiting["pending_approvals"]
    assert asked["name"] == "sampling" and asked["arguments"]["messages"] == ["user: a haiku"]
    assert allowed.status_code == 200
    assert done["status"] == "succeeded" and done["answer"] == "Done: old pond"
    call = done["steps"][0]["tool_calls"][0]
    assert json.loads(call["result"]["content"][0]["text"])["text"] == "old pond"
    assert (done["input_tokens"], done["output_tokens"]) == (37, 9)
