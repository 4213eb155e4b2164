"""An operator's `/metrics` counts alice's chat turns and the tool calls her model made."""

from __future__ import annotations

import pytest

from tests.chat.conftest import Api, chat_socket
from tests.llm_server import Reply
from tests.live_hub import metric, scrape_metrics

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


async def test_chat_turns_and_their_tool_calls_are_counted(hub, llm, alice_provider, alice_endpoint, alice_hub_token, scrape_token):
    llm.script([Reply(tool_calls=[("c1", "echo", {"text": "hi"})]), Reply(text=["It said hi"])])
    before = await scrape_metrics(hub, scrape_token)
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "Echo hi"})
            end = await chat.until("end")
    after = await scrape_metrics(hub, scrape_token)

    assert end["payload"]["status"] == "complete"
    assert metric(after, "mcphub_chat_turns_total", status="complete") - metric(before, "mcphub_chat_turns_total", status="complete") == 1
    echo = {"server": "echo", "tool": "echo"}
    assert metric(after, "mcphub_tool_calls_total", **echo) - metric(before, "mcphub_tool_calls_total", **echo) == 1
