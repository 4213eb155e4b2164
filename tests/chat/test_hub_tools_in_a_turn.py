"""Alice enabled the hub's own tools on her endpoint: a chat turn offers them to the model, and a
call to one is answered by the hub (the built-in server), as her, like one from an MCP client."""

from __future__ import annotations

import pytest

from apps.toolsets.models import ToolCall
from tests.chat.conftest import Api, chat_socket, db
from tests.chat.runs.conftest import hub_tools  # noqa: F401 - the fixture
from tests.live_hub import mcp_client
from tests.llm_server import Reply
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


async def test_a_turn_calls_a_hub_tool_and_gets_its_real_answer(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token, hub_tools
):
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        listed = [t.name for t in (await client.list_tools()).tools]
    name = next(n for n in listed if n.endswith("list_available_mcps"))
    llm.script([Reply(tool_calls=[("c1", name, {})]), Reply(text=["You have echo."])])

    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "Which MCP servers may I use?"})
            end = await chat.until("end")

    assert end["payload"]["status"] == "complete"
    offered = {t["function"]["name"] for t in llm.requests[0]["tools"]}
    assert name in offered
    (result,) = chat.of("tool_result")
    assert result["payload"]["isError"] is False, result["payload"]
    # The hub's answer, as list_available_mcps gives it: her echo server and its enabled tools.
    assert result["payload"]["content"][0]["text"].startswith("echo (")
    assert "tools enabled here" in result["payload"]["content"][0]["text"]
    tool_message = next(m for m in llm.requests[1]["messages"] if m["role"] == "tool")
    assert tool_message["content"].startswith("echo (")
    logged = await eventually_async(  # the call log is written in batches
        db(
            lambda: list(
                ToolCall.objects.filter(endpoint=alice_endpoint).values_list(
                    "server_name", "exposed_name", "ok"
                )
            )
        ),
        what="the hub tool's call in the call log",
    )
    assert logged == [("hub", name, True)]
