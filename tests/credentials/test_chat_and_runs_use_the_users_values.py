"""Chat turns and autonomous runs call tools through `Toolbox` (apps/chat/tools.py): the same
per-user specs as the endpoint, so alice's model uses alice's values and charlie's model is told
what charlie must fill."""

from __future__ import annotations

import json

import pytest

from apps.chat.tools import Toolbox
from apps.credentials.services import save_credentials
from apps.llm.types import ToolCall
from apps.toolsets.services import enable_tools

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("_close_thread_connections"),
]


@pytest.fixture
def endpoints(alice, charlie, stdio_server):
    for user in (alice, charlie):
        enable_tools(endpoint=user.endpoints.get(), tools=stdio_server.tools.all())
    save_credentials(user=alice, server=stdio_server, values={"TOKEN": "alice-chat-token"})
    return {user.username: user.endpoints.get().pk for user in (alice, charlie)}


async def _call(user, endpoint_id: int) -> dict:
    toolbox = await Toolbox.load(user.pk, endpoint_id)
    exposed = toolbox.find("whoami")
    assert exposed is not None, list(toolbox.view.tools)
    return await toolbox.call(exposed, ToolCall(id="call-1", name="whoami", arguments={}))


async def test_alices_model_calls_with_her_values_and_charlies_hears_what_to_fill(
    pool_host, alice, charlie, endpoints
):
    alice_result = await _call(alice, endpoints["alice"])
    charlie_result = await _call(charlie, endpoints["charlie"])

    assert not alice_result.get("isError"), alice_result
    assert json.loads(alice_result["content"][0]["text"])["token"] == "alice-chat-token"
    assert charlie_result["isError"] is True
    text = charlie_result["content"][0]["text"]
    assert (
        "wstdio needs your credentials: fill TOKEN" in text
        and "/servers/wstdio/credentials/" in text
    )
    assert "alice-chat-token" not in text
