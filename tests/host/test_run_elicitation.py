"""A run's backend asks Alice for a form's values: the run waits in `waiting_input` (kept in the
database, so her other device sees the question), her answer is checked against the form, and
the run goes on with it."""

from __future__ import annotations

import pytest

from apps.chat.runs.models import Run
from tests.chat.conftest import Api, db
from tests.chat.runs.conftest import start_run, wait_run
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


async def test_a_run_waits_for_alices_answer_to_a_backends_form(
    hub, llm, alice_provider, everything_endpoint, alice_hub_token
):
    llm.script(
        [
            Reply(tool_calls=[("c1", "trigger-elicitation-request", {})]),
            Reply(text=["Thanks, Alice."]),
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Collect my details")
        waiting = await wait_run(api, run["id"], until=("waiting_input",))
        [asked] = waiting["pending_input"]
        stored = await db(lambda: Run.objects.get(pk=run["id"]).pending_input)()
        answer = f"/runs/{run['id']}/answer/"
        wrong = await api.client.post(
            answer, json={"id": asked["id"], "action": "accept", "content": {"integer": 500}}
        )
        unknown = await api.client.post(answer, json={"id": "elicit-x", "action": "decline"})
        right = await api.client.post(
            answer,
            json={
                "id": asked["id"],
                "action": "accept",
                "content": {"name": "Alice Liddell", "integer": 7},
            },
        )
        done = await wait_run(api, run["id"])

    assert asked["message"] == "Please provide inputs for the following fields:"
    assert asked["requestedSchema"]["required"] == ["name"]
    assert stored == waiting["pending_input"]
    assert wrong.status_code == 400 and "String is required." in wrong.text
    assert unknown.status_code == 409
    assert right.status_code == 200
    assert done["status"] == "succeeded" and done["pending_input"] == []
    result = done["steps"][0]["tool_calls"][0]["result"]
    text = "\n".join(c["text"] for c in result["content"])
    assert "- Name: Alice Liddell" in text and "- Favorite Integer: 7" in text


def test_the_run_page_shows_the_question_until_it_is_answered(client, alice, everything_endpoint):
    asked = {"id": "elicit-1", "message": "Your name?", "mode": "form", "requestedSchema": {}}
    run = Run.objects.create(
        owner=alice, task="t", status=Run.Status.WAITING_INPUT, pending_input=[asked]
    )
    client.force_login(alice)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'class="elicitation-pending"' in page and "Your name?" in page
    assert "Waiting for input" in page

    refused = client.post(
        f"/runs/{run.pk}/answer/",
        {"id": "elicit-9", "action": "decline"},
        content_type="application/json",
    )
    assert refused.status_code == 400 and "not waiting" in refused.json()["error"]
    Run.objects.filter(pk=run.pk).update(status=Run.Status.CANCELLED)  # no worker holds it
