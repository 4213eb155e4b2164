"""server-everything asks the user for a form's values during a chat turn: Alice answers on the
page; an answer that does not fit the form is shown again with what is wrong; declining is told."""

from __future__ import annotations

import pytest

from tests.chat.conftest import Api, chat_socket
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


def _texts(result: dict) -> str:
    return "\n".join(c.get("text", "") for c in result["payload"]["content"])


async def test_alice_fills_the_form_a_backend_asks_for(
    hub, llm, alice_provider, everything_endpoint, alice_hub_token
):
    llm.script([Reply(tool_calls=[("c1", "trigger-elicitation-request", {})]), Reply(text=["ok"])])
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "ask me"})
            asked = (await chat.until("elicitation_required"))["payload"]
            await chat.send(
                "elicit",
                {"id": asked["id"], "action": "accept", "content": {"email": "not an address"}},
            )
            again = (await chat.until("elicitation_required"))["payload"]
            await chat.send(
                "elicit",
                {
                    "id": asked["id"],
                    "action": "accept",
                    "content": {
                        "name": "Alice Liddell",
                        "email": "alice@example.com",
                        "integer": "7",
                        "untitledMultipleSelectEnum": ["Piano", "Drums"],
                    },
                },
            )
            answered = (await chat.until("elicitation_answered"))["payload"]
            result = await chat.until("tool_result")
            await chat.until("end")

    schema = asked["requestedSchema"]
    assert asked["message"] == "Please provide inputs for the following fields:"
    assert schema["required"] == ["name"] and schema["properties"]["email"]["format"] == "email"
    assert again["id"] == asked["id"] and again["error"] == "String is required."
    assert answered == {"id": asked["id"], "action": "accept"}
    text = _texts(result)
    assert "User provided the requested information" in text
    assert "- Name: Alice Liddell" in text and "- Favorite Integer: 7" in text


async def test_declining_is_what_the_backend_hears(
    hub, llm, alice_provider, everything_endpoint, alice_hub_token
):
    llm.script([Reply(tool_calls=[("c1", "trigger-elicitation-request", {})]), Reply(text=["ok"])])
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "ask me"})
            asked = (await chat.until("elicitation_required"))["payload"]
            await chat.send("elicit", {"id": asked["id"], "action": "maybe"})
            refused = await chat.until("error")
            await chat.send("elicit", {"id": asked["id"], "action": "decline"})
            result = await chat.until("tool_result")

    assert refused["seq"] is None and "accept, decline or cancel" in refused["payload"]["message"]
    assert "User declined to provide the requested information" in _texts(result)


async def test_a_url_elicitation_shows_the_link_and_alice_accepts(
    hub, llm, alice_provider, everything_endpoint, alice_hub_token
):
    url = "https://example.com/verify?step=1"
    llm.script(
        [Reply(tool_calls=[("c1", "trigger-url-elicitation", {"url": url})]), Reply(text=["ok"])]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "verify me"})
            asked = (await chat.until("elicitation_required"))["payload"]
            await chat.send("elicit", {"id": asked["id"], "action": "accept"})
            result = await chat.until("tool_result", id="c1")

    assert (asked["mode"], asked["url"]) == ("url", url)
    assert asked["message"] == "Please open the link to complete this action."
    assert result["payload"]["isError"] is False
    assert "User completed the URL elicitation flow" in _texts(result)
