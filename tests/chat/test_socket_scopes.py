"""The chat and run sockets apply the REST API's token scopes, on the live hub: `api_read` follows,
`api_write` and `full` (and Alice's browser session) also act; MCP, endpoint-scoped and OAuth
tokens are refused at connect, as is anyone but the owner. A read-only socket's action gets a
`forbidden` error and nothing happens: no turn, no stop, no approval recorded."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
import websockets

from apps.accounts.services import create_access_token
from apps.catalog.models import Tool
from apps.chat import records as chat_records
from apps.chat.models import Conversation, Turn
from apps.chat.runs.models import Run
from apps.toolsets.services import create_endpoint
from tests.chat.conftest import Api, ChatSocket, chat_socket, db
from tests.chat.test_approval_and_errors import _session_cookie
from tests.llm_server import Reply
from tests.oauth.oauth_client import approve as consent
from tests.oauth.oauth_client import endpoint_resource, exchange, public_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


@dataclass
class Who:
    """A credential as a WebSocket client presents it."""

    headers: dict[str, str] = field(default_factory=dict)
    origin: str | None = None


def bearer(raw: str) -> Who:
    return Who({"Authorization": f"Bearer {raw}"})


@pytest.fixture
def other_endpoint(alice, alice_endpoint):
    """Alice's second endpoint: none of her chat tools are on it."""
    return create_endpoint(owner=alice, name="Scratch")


@pytest.fixture
def oauth_token(client, alice, alice_endpoint) -> str:
    """An OAuth access token an MCP client got for Alice's endpoint, through the real flow."""
    client.force_login(alice)
    app = public_client(client)
    response = exchange(client, app, consent(client, app, endpoint_resource(alice_endpoint)))
    assert response.status_code == 200, response.content
    return response.json()["access_token"]


@pytest.fixture
def who(hub, alice, charlie, alice_endpoint, other_endpoint, oauth_token) -> Callable[[str], Who]:
    def make(kind: str) -> Who:
        if kind == "session":
            return Who({"Cookie": _session_cookie(alice)}, origin=hub.base_url)
        if kind == "oauth":
            return bearer(oauth_token)
        if kind == "charlie":
            return bearer(create_access_token(user=charlie, name="charlie")[1])
        endpoints = {"mcp_endpoint": alice_endpoint, "mcp_other_endpoint": other_endpoint}
        if kind in endpoints:
            return bearer(create_access_token(user=alice, name=kind, endpoint=endpoints[kind])[1])
        return bearer(create_access_token(user=alice, name=kind, scope=kind)[1])

    return make


def ws_url(hub, path: str) -> str:
    return hub.url(path).replace("http://", "ws://")


@asynccontextmanager
async def socket_as(hub, path: str, who: Who) -> AsyncIterator[ChatSocket]:
    async with websockets.connect(
        ws_url(hub, path), additional_headers=who.headers, origin=who.origin
    ) as ws:
        yield ChatSocket(ws)


async def refused(hub, path: str, who: Who) -> bool:
    try:
        async with socket_as(hub, path, who):
            return False
    except websockets.InvalidStatus as exc:
        return exc.response.status_code == 403


def _followed(alice) -> tuple[Conversation, Run]:
    """A conversation with one stored event and a finished run: something to follow."""
    conversation = Conversation.objects.create(
        owner=alice, endpoint=alice.endpoints.get(is_default=True)
    )
    chat_records.save_events(
        conversation.pk, [{"seq": 1, "type": "user_message", "payload": {"text": "hello"}}]
    )
    run = Run.objects.create(owner=alice, task="Count", status=Run.Status.SUCCEEDED, answer="3")
    return conversation, run


FOLLOWERS = ["full", "api_write", "api_read", "session"]
REFUSED = ["mcp", "mcp_endpoint", "mcp_other_endpoint", "oauth", "charlie"]


@pytest.mark.parametrize("kind", FOLLOWERS + REFUSED)
async def test_who_may_follow_a_conversation_and_a_run(hub, alice, who, kind):
    conversation, run = await db(_followed)(alice)
    credential = await db(who)(kind)
    chat, runs = f"/ws/chat/{conversation.pk}/", f"/ws/runs/{run.pk}/"

    if kind in REFUSED:
        assert await refused(hub, chat, credential) and await refused(hub, runs, credential)
        return
    async with socket_as(hub, chat, credential) as socket:
        await socket.send("resume", {"after": 0})
        assert (await socket.next())["payload"] == {"text": "hello"}
    async with socket_as(hub, runs, credential) as socket:
        await socket.send("resume", {"after": 0})
        assert (await socket.next())["payload"]["answer"] == "3"


async def test_a_token_for_alices_other_endpoint_cannot_drive_her_conversation(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token, who
):
    """The attack: a token Alice gave a client for her scratch endpoint opened her conversation (on
    the endpoint with her tools) and ran those tools through it."""
    llm.script([Reply(tool_calls=[("c1", "echo", {"text": "exfiltrate"})]), Reply(text=["done"])])
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
    attacker = await db(who)("mcp_other_endpoint")

    assert await refused(hub, f"/ws/chat/{conversation}/", attacker)
    assert await db(Turn.objects.filter(conversation_id=conversation).count)() == 0
    assert llm.requests == []


@pytest.fixture
def waiting_echo(alice_endpoint, echo_server):
    """Alice's echo tool needs her approval: a turn calling it waits for her."""
    Tool.objects.filter(server=echo_server, name="echo").update(
        annotations={"destructiveHint": True}
    )
    return alice_endpoint


@pytest.mark.parametrize("kind", ["full", "api_write", "session", "api_read"])
@pytest.mark.parametrize("action", ["message", "stop", "approve"])
async def test_each_scope_on_each_action(
    hub, llm, alice_provider, waiting_echo, alice_hub_token, who, kind, action
):
    allowed = kind != "api_read"
    actor = await db(who)(kind)
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
    path = f"/ws/chat/{conversation}/"
    async with (
        chat_socket(hub, conversation, alice_hub_token) as owner,
        socket_as(hub, path, actor) as socket,
    ):
        if action == "message":
            llm.script([Reply(text=["hi"])])
            await socket.send("message", {"text": "hello"})
        else:  # a turn waiting for Alice's approval, then the actor's stop or allow
            llm.script([Reply(tool_calls=[("c1", "echo", {"text": "x"})]), Reply(text=["done"])])
            await owner.send("message", {"text": "go"})
            await owner.until("approval_required")
            await socket.send(
                action, {"call_id": "c1", "allow": True} if action == "approve" else None
            )

        if not allowed:
            error = await socket.until("error")
            assert (error["seq"], error["payload"]["code"]) == (None, "forbidden")
            assert "read-only" in error["payload"]["message"]
            if action == "message":
                assert (
                    await db(Turn.objects.filter(conversation_id=conversation).count)() == 0
                    and llm.requests == []
                )
                return
            await owner.send(
                "approve", {"call_id": "c1", "allow": False}
            )  # Alice denies: the actor's allow never counted
            result = await owner.until("tool_result")
            end = await owner.until("end")
            assert result["payload"]["isError"] is True and end["payload"]["status"] == "complete"
            return
        end = await owner.until("end")

    expected = {"message": "complete", "stop": "stopped", "approve": "complete"}[action]
    assert end["payload"]["status"] == expected
    if action == "approve":
        assert owner.of("tool_result")[0]["payload"]["isError"] is False
    if action == "message":
        assert owner.of("user_message")[0]["payload"]["text"] == "hello"
