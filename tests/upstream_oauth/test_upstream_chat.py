"""A chat turn in the real hub (scripted LLM): alice's model calls an OAuth backend with her own
sign-in, and the model is told to have her connect it when she has not."""

from __future__ import annotations

import json

import pytest

from apps.accounts.services import create_access_token
from apps.catalog import operations
from apps.catalog.models import McpServer
from apps.toolsets.services import enable_tools
from tests.chat.conftest import Api, alice_provider, chat_socket, llm  # noqa: F401 - fixtures
from tests.llm_server import Reply
from tests.upstream_oauth.upstream import connect, whoami
from tests.waiting import eventually, eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


@pytest.fixture
def alice_token(hub, oauth_backend, admin_user, alice, browser_of) -> str:
    server = McpServer.objects.create(
        name="vault", transport="streamable_http", url=oauth_backend.url
    )
    operations.discover_now(server=server)  # marks it as requiring OAuth
    browser_of(admin_user).authorize("vault", subject="admin-chat@vault")
    eventually(lambda: server.tools.filter(name="whoami").exists(), timeout=60)
    enable_tools(endpoint=alice.endpoints.get(), tools=server.tools.all())
    return create_access_token(user=alice, name="chat")[1]


async def _turn(hub, llm, token: str) -> str:  # noqa: F811
    llm.script([Reply(tool_calls=[("c1", "whoami", {})]), Reply(text=["done"])])
    async with Api(hub.base_url, token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, token) as chat:
            await chat.send("message", {"text": "who am I there?"})
            await chat.until("end")
    return next(m["content"] for m in llm.requests[-1]["messages"] if m["role"] == "tool")


async def test_a_chat_turn_calls_the_backend_with_alices_own_sign_in(
    hub, llm, alice_provider, alice_token, alice, browser_of
):  # noqa: F811
    told_before = await _turn(hub, llm, alice_token)
    await connect(browser_of, alice, "alice-chat@vault")

    # Embedded, a version read that meets a writer committing serves the last value seen once
    # (apps/core/hotstate.py): let the hub process see the change before the turn.
    async def signed_in() -> bool:
        return (await whoami(hub, alice))[0] is not None

    await eventually_async(signed_in, timeout=5)
    told_after = await _turn(hub, llm, alice_token)

    assert "needs your own OAuth sign-in: connect vault at " in told_before
    assert json.loads(told_after)["subject"] == "alice-chat@vault"
