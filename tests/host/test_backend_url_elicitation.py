"""A backend sends Alice to a page of its own (URL elicitation) and, once she opened it, says so
(`notifications/elicitation/complete`): the chat turn's and the run's followers hear it, and a
gateway client that declares elicitation gets it relayed. The GET of the link stands in for her
browser's tab (tests/host/test_browser.py opens it from the chat page in Chromium)."""

from __future__ import annotations

import json

import httpx2
import mcp_types as types
import pytest
import websockets
from django.test import Client

from tests.chat.conftest import Api, chat_socket, db
from tests.chat.runs.conftest import start_run, wait_run
from tests.live_hub import mcp_client
from tests.llm_server import Reply
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


async def _open(url: str) -> None:
    async with httpx2.AsyncClient() as browser:
        assert (await browser.get(url)).status_code == 200


async def test_a_chat_turn_hears_the_backend_finish_its_link(
    hub, llm, alice_provider, asker_endpoint, alice_hub_token
):
    llm.script([Reply(tool_calls=[("c1", "connect_account", {})]), Reply(text=["Connected."])])
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "connect my account"})
            asked = (await chat.until("elicitation_required"))["payload"]
            await chat.send("elicit", {"id": asked["id"], "action": "accept"})
            answered = (await chat.until("elicitation_answered"))["payload"]
            await _open(asked["url"])
            complete = (await chat.until("elicitation_complete"))["payload"]
            result = (await chat.until("tool_result"))["payload"]
            await chat.until("end")

    assert asked["mode"] == "url" and asked["message"] == "Connect your account to go on."
    assert answered == {"id": asked["id"], "action": "accept"}
    assert complete == {"elicitationId": asked["elicitationId"]}
    assert result["content"][0]["text"] == f"connected ({asked['elicitationId']})"


async def test_a_run_hears_the_backend_finish_its_link(
    hub, llm, alice, alice_provider, asker_endpoint, alice_hub_token
):
    llm.script([Reply(tool_calls=[("c1", "connect_account", {})]), Reply(text=["Connected."])])
    headers = {"Authorization": f"Bearer {alice_hub_token}"}
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Connect my account")
        waiting = await wait_run(api, run["id"], until=("waiting_input",))
        [asked] = waiting["pending_input"]
        url = hub.url(f"/ws/runs/{run['id']}/").replace("http://", "ws://")
        async with websockets.connect(url, additional_headers=headers) as ws:
            await ws.send(json.dumps({"type": "resume", "payload": {"after": 0}}))
            answer = await api.client.post(
                f"/runs/{run['id']}/answer/", json={"id": asked["id"], "action": "accept"}
            )
            await _open(asked["url"])
            heard = []
            while not heard:
                event = json.loads(await ws.recv())
                if event["type"] == "elicitation_complete":
                    heard.append(event["payload"])
        done = await wait_run(api, run["id"])

    assert asked["mode"] == "url" and asked["url"].startswith("http://127.0.0.1:")
    assert answer.status_code == 200
    assert heard == [{"elicitationId": asked["elicitationId"]}]
    assert done["status"] == "succeeded" and done["pending_input"] == []
    [call] = done["steps"][0]["tool_calls"]
    assert call["result"]["content"][0]["text"] == f"connected ({asked['elicitationId']})"
    # Kept with the call in its step: the run's page, reloaded, still says the link was done.
    assert call["elicitation_complete"] == [asked["elicitationId"]]
    page = await db(_page)(alice, f"/runs/{run['id']}/")
    assert "Done at the link: the server heard you finished." in page


def _page(user, path: str) -> str:
    client = Client()
    client.force_login(user)
    return client.get(path).content.decode()


async def test_a_gateway_client_that_takes_url_elicitation_gets_the_completion(
    hub, asker_endpoint, alice_hub_token
):
    asked: list[types.ElicitRequestURLParams] = []
    completed: list[str] = []

    async def elicit(context, params) -> types.ElicitResult:
        asked.append(params)
        await _open(params.url)
        return types.ElicitResult(action="accept")

    async def heard(message) -> None:
        if isinstance(message, types.ElicitCompleteNotification):
            completed.append(message.params.elicitation_id)

    async with mcp_client(
        hub.url(asker_endpoint.path),
        alice_hub_token,
        elicitation_callback=elicit,
        message_handler=heard,
    ) as client:
        [tool] = [t.name for t in (await client.list_tools()).tools if "connect_account" in t.name]
        result = await client.call_tool(tool, {})
        await eventually_async(lambda: completed, what="notifications/elicitation/complete")

    [url_asked] = asked
    assert url_asked.mode == "url" and url_asked.message == "Connect your account to go on."
    assert completed == [url_asked.elicitation_id]
    assert result.content[0].text == f"connected ({url_asked.elicitation_id})"
