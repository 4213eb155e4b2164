"""Destructive tools wait for Alice's approval; provider failures and bad client messages are clear."""

from __future__ import annotations

import pytest
import websockets

from apps.catalog.models import Tool
from apps.chat.models import Conversation
from apps.llm.models import Provider
from tests.chat.conftest import Api, chat_socket, db
from tests.live_hub import free_port
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


@pytest.fixture
def destructive_echo(alice_endpoint, echo_server):
    Tool.objects.filter(server=echo_server, name="echo").update(
        annotations={"destructiveHint": True}
    )
    return alice_endpoint


@pytest.mark.parametrize("allow", [True, False])
async def test_a_destructive_call_waits_for_approval(
    hub, llm, alice_provider, destructive_echo, alice_hub_token, allow
):
    llm.script(
        [Reply(tool_calls=[("c1", "echo", {"text": "delete everything"})]), Reply(text=["done"])]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "go"})
            asked = await chat.until("approval_required")
            assert not chat.of("tool_result")
            await chat.send("approve", {"call_id": "c1", "allow": allow})
            result = await chat.until("tool_result")
            await chat.until("end")

    assert asked["payload"] == {
        "id": "c1",
        "name": "echo",
        "arguments": {"text": "delete everything"},
        "reason": "marked destructive by its server",
    }
    assert result["payload"]["isError"] is (not allow)
    told = [m for m in llm.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
    if allow:
        assert told == "delete everything"
    else:
        assert told.endswith("The user denied the call to echo.")


async def test_approval_off_runs_destructive_tools_directly(
    hub, llm, alice_provider, destructive_echo, alice_hub_token
):
    await db(
        lambda: type(destructive_echo).objects.filter(pk=destructive_echo.pk).update(approval="off")
    )()
    llm.script([Reply(tool_calls=[("c1", "echo", {"text": "x"})]), Reply(text=["done"])])
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "go"})
            await chat.until("end")
    assert (
        not chat.of("approval_required")
        and chat.of("tool_result")[0]["payload"]["isError"] is False
    )


@pytest.mark.parametrize(
    "replies, expected",
    [
        ([Reply(error=401)], "api key"),
        ([Reply(error=429, retry_after=0), Reply(text=["fine"])], None),
    ],
)
async def test_provider_errors_are_shown_clearly(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token, replies, expected
):
    llm.script(replies)
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "hello"})
            end = await chat.until("end")

    if expected is None:
        assert end["payload"]["status"] == "complete" and chat.text() == "fine"
    else:
        assert end["payload"]["status"] == "failed"
        assert expected in chat.of("error")[0]["payload"]["message"].lower()


async def test_an_unreachable_provider_is_shown_clearly(
    hub, alice, alice_endpoint, alice_hub_token
):
    await db(
        lambda: Provider.objects.create(
            name="down",
            kind="openai",
            base_url=f"http://127.0.0.1:{free_port()}/v1",
            default_model="m",
            owner=alice,
        )
    )()
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "hello"})
            end = await chat.until("end")
    assert end["payload"]["status"] == "failed"
    assert "model provider failed" in chat.of("error")[0]["payload"]["message"]


async def test_no_provider_tells_how_to_add_one(hub, alice, alice_endpoint, alice_hub_token):
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        posted = await api.client.post(
            f"/conversations/{conversation}/messages/", json={"text": "hi"}
        )
    assert posted.status_code == 400 and "mcp_llm add" in posted.json()["detail"]


async def test_malformed_and_unknown_messages_get_an_error_and_change_nothing(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            for raw in [
                "not json",
                '{"type": "dance"}',
                '["message"]',
                '{"type": "message", "payload": {"text": 5}}',
                '{"type": "approve", "payload": {"call_id": "x"}}',
                '{"type": "resume", "payload": {"after": -1}}',
                '{"type": "stop"}',
            ]:
                await chat.ws.send(raw)
                error = await chat.next()
                assert (
                    error["type"] == "error"
                    and error["seq"] is None
                    and error["payload"]["message"]
                )
    assert await db(lambda: Conversation.objects.get(pk=conversation).turns.count())() == 0


async def test_charlie_cannot_reach_alices_conversation(
    hub, alice_provider, alice_endpoint, alice_hub_token, charlie_hub_token
):
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
    async with Api(hub.base_url, charlie_hub_token) as charlie:
        assert (await charlie.client.get(f"/conversations/{conversation}/")).status_code == 404
        assert (
            await charlie.client.get(f"/conversations/{conversation}/messages/")
        ).status_code == 404
        assert (
            await charlie.client.post(
                f"/conversations/{conversation}/messages/", json={"text": "hi"}
            )
        ).status_code == 404
        assert (await charlie.client.delete(f"/conversations/{conversation}/")).status_code == 404
        assert conversation not in str((await charlie.client.get("/conversations/")).json())
    for headers in (
        {"Authorization": f"Bearer {charlie_hub_token}"},
        {},
        {"Authorization": "Bearer nonsense"},
    ):
        with pytest.raises(websockets.InvalidStatus):
            async with websockets.connect(
                hub.url(f"/ws/chat/{conversation}/").replace("http", "ws"),
                additional_headers=headers,
            ):
                pass
    assert await db(lambda: Conversation.objects.get(pk=conversation).turns.count())() == 0


async def test_a_browser_session_works_only_from_the_hubs_own_pages(
    hub, alice, alice_provider, alice_endpoint, alice_hub_token
):
    cookie = await db(lambda: _session_cookie(alice))()
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
    url = hub.url(f"/ws/chat/{conversation}/").replace("http", "ws")
    async with websockets.connect(
        url, additional_headers={"Cookie": cookie}, origin=hub.base_url
    ) as ws:
        await ws.send('{"type": "resume", "payload": {"after": 0}}')
        await ws.send('{"type": "dance"}')
        assert '"error"' in await ws.recv()  # connected and answering
    for origin in ("http://evil.example", None):  # another site's page, or no Origin at all
        with pytest.raises(websockets.InvalidStatus):
            async with websockets.connect(
                url, additional_headers={"Cookie": cookie}, origin=origin
            ):
                pass


def _session_cookie(user) -> str:
    from django.conf import settings
    from django.test import Client

    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
