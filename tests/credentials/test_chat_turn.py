"""A chat turn in the real hub (scripted LLM): alice's model calls the shared stdio server with her
values, and the shared HTTP server, whose values she has not filled, answers the model and her
screen with what to fill and where."""

from __future__ import annotations

import json

import pytest

from apps.accounts.services import create_access_token
from apps.credentials.services import save_credentials
from apps.toolsets.services import enable_tools
from tests.chat.conftest import Api, alice_provider, chat_socket, llm  # noqa: F401 - fixtures
from tests.llm_server import Reply

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(90),
    pytest.mark.usefixtures("_close_thread_connections"),
]


@pytest.fixture
def alice_token(alice, stdio_server, http_server) -> str:
    enable_tools(
        endpoint=alice.endpoints.get(), tools=[*stdio_server.tools.all(), *http_server.tools.all()]
    )
    save_credentials(user=alice, server=stdio_server, values={"TOKEN": "alice-chat-turn-token"})
    return create_access_token(user=alice, name="chat")[1]


async def test_a_chat_turn_uses_alices_values_and_names_what_she_must_fill(
    hub, llm, alice_provider, alice_token
):  # noqa: F811
    llm.script(
        [
            Reply(tool_calls=[("c1", "wstdio__whoami", {}), ("c2", "whttp__whoami", {})]),
            Reply(text=["done"]),
        ]
    )
    async with Api(hub.base_url, alice_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_token) as chat:
            await chat.send("message", {"text": "who am I?"})
            await chat.until("end")

    results = {event["payload"]["id"]: event["payload"] for event in chat.of("tool_result")}
    told = {
        m["tool_call_id"]: m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"
    }
    assert (
        results["c1"]["isError"] is False
        and json.loads(told["c1"])["token"] == "alice-chat-turn-token"
    )
    assert results["c2"]["isError"] is True
    assert (
        "whttp needs your credentials: fill TOKEN, KEY" in told["c2"]
        and "/servers/whttp/credentials/" in told["c2"]
    )
