"""With `ask`, Alice may edit a backend's sampling request before allowing it (in chat and in a
run): the messages' text, the system prompt, max tokens within the endpoint's cap, the model. Her
model answers the edited request; an edit that does not fit is refused and changes nothing."""

from __future__ import annotations

import json

import pytest

from apps.llm.models import Provider
from apps.toolsets.models import Endpoint
from tests.chat.conftest import Api, chat_socket, db
from tests.chat.runs.conftest import start_run, wait_run
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


async def test_alice_edits_a_sampling_request_in_chat_and_her_model_answers_the_edit(
    hub, llm, alice, alice_provider, asker_endpoint, alice_hub_token
):
    await db(Endpoint.objects.filter(pk=asker_endpoint.pk).update)(sampling="ask")
    other = await db(Provider.objects.create)(
        name="large", kind="openai", base_url=llm.url, default_model="scripted-large", owner=alice
    )
    llm.script(
        [
            Reply(tool_calls=[("c1", "write", {"question": "a haiku about ponds"})]),
            Reply(text=["frogs leap"]),
            Reply(text=["Here it is."]),
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "write me a haiku"})
            asked = (await chat.until("approval_required"))["payload"]
            call = asked["id"]
            # Over the endpoint's cap (300): refused, the request shown again saying why.
            await chat.send("approve", {"call_id": call, "allow": True, "edit": {"maxTokens": 301}})
            again = (await chat.until("approval_required", id=call))["payload"]
            await chat.send(
                "approve",
                {
                    "call_id": call,
                    "allow": True,
                    "edit": {
                        "systemPrompt": "You write short haiku.",
                        "messages": ["a haiku about frogs"],
                        "maxTokens": 50,
                        "model": f"{other.pk}:scripted-large",
                    },
                },
            )
            card = (await chat.until("tool_result", id=call))["payload"]
            result = await chat.until("tool_result", id="c1")
            await chat.until("end")

    editable = asked["editable"]
    assert editable["messages"] == [{"role": "user", "text": "a haiku about ponds"}]
    assert (editable["maxTokens"], editable["maxTokensCap"]) == (300, 300)
    assert editable["model"] == f"{alice_provider.pk}:scripted-model"
    assert f"{other.pk}:scripted-large" in [m["value"] for m in editable["models"]]
    assert "from 1 to 300" in again["editable"]["error"]
    assert len(llm.requests) == 3  # the refused edit sent nothing
    sampled = llm.requests[1]
    assert sampled["model"] == "scripted-large" and sampled["max_tokens"] == 50
    assert sampled["messages"] == [
        {"role": "system", "content": "You write short haiku."},
        {"role": "user", "content": "a haiku about frogs"},
    ]
    answer = json.loads(result["payload"]["content"][0]["text"])
    assert (answer["text"], answer["model"]) == ("frogs leap", "scripted-large")
    # Her sampling card shows the request as sent, not as the backend first asked it.
    assert card["arguments"] == {
        "systemPrompt": "You write short haiku.",
        "messages": ["user: a haiku about frogs"],
        "maxTokens": 50,
        "model": "large · scripted-large",
    }


async def test_a_run_takes_alices_edit_and_refuses_one_that_does_not_fit(
    hub, llm, alice_provider, asker_endpoint, alice_hub_token
):
    await db(Endpoint.objects.filter(pk=asker_endpoint.pk).update)(sampling="ask")
    llm.script(
        [
            Reply(tool_calls=[("c1", "write", {"question": "a haiku"})]),
            Reply(text=["snow falls"]),
            Reply(text=["Done: snow falls"]),
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Get a haiku written")
        waiting = await wait_run(api, run["id"], until=("waiting_approval",))
        [asked] = waiting["pending_approvals"]
        approve = f"/runs/{run['id']}/approve/"
        refused = [
            await api.client.post(approve, json={"call_id": asked["id"], "allow": True, "edit": e})
            for e in ({"messages": ["a", "b"]}, {"model": "999:gpt-9"}, {"maxTokens": 0})
        ]
        still = await wait_run(api, run["id"], until=("waiting_approval",))
        allowed = await api.client.post(
            approve,
            json={
                "call_id": asked["id"],
                "allow": True,
                "edit": {"messages": ["a haiku about snow"]},
            },
        )
        done = await wait_run(api, run["id"])

    assert asked["editable"]["messages"] == [{"role": "user", "text": "a haiku"}]
    assert [r.status_code for r in refused] == [400, 400, 400]
    said = [json.dumps(r.json()) for r in refused]
    assert "each of the request's 1 messages" in said[0] and "among your providers" in said[1]
    assert "from 1 to 300" in said[2]
    assert still["pending_approvals"] == [asked]  # nothing changed
    assert allowed.status_code == 200
    assert done["status"] == "succeeded" and done["answer"] == "Done: snow falls"
    assert llm.requests[1]["messages"][-1] == {"role": "user", "content": "a haiku about snow"}
    assert llm.requests[1]["max_tokens"] == 300
