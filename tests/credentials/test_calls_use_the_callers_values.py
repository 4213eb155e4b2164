"""Alice and bob share one stdio and one HTTP server, each with their own credentials; charlie has none.

Through the real hub (uvicorn, and a Celery pool worker when REDIS_URL is set) and the SDK client:
each backend sees only the caller's values, each user gets their own stdio child, changing alice's
values replaces only her connection, and charlie is told what to fill and where.
"""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from apps.accounts.services import create_access_token
from apps.credentials.services import save_credentials
from apps.toolsets.services import enable_tools
from tests.live_hub import mcp_client

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("_close_thread_connections"),
]

ALICE = {"TOKEN": "alice-token-7f3a", "KEY": "alice key&=1"}
BOB = {"TOKEN": "bob-token-91c2", "KEY": "bob-key-2"}


@pytest.fixture
def people(alice, bob, charlie, stdio_server, http_server):
    tokens = {}
    for user in (alice, bob, charlie):
        enable_tools(
            endpoint=user.endpoints.get(),
            tools=[*stdio_server.tools.all(), *http_server.tools.all()],
        )
        tokens[user.username] = (
            user.endpoints.get().path,
            create_access_token(user=user, name="creds tests")[1],
        )
    for user, values in ((alice, ALICE), (bob, BOB)):
        save_credentials(user=user, server=stdio_server, values={"TOKEN": values["TOKEN"]})
        save_credentials(user=user, server=http_server, values=values)
    return tokens


async def _whoami(hub, path: str, token: str) -> tuple[dict, dict]:
    async with mcp_client(hub.url(path), token) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        stdio = await client.call_tool("wstdio__whoami", {})
        http = await client.call_tool("whttp__whoami", {})
    assert {"wstdio__whoami", "whttp__whoami"} <= names
    assert not stdio.is_error and not http.is_error, (stdio.content, http.content)
    return json.loads(stdio.content[0].text), json.loads(http.content[0].text)


async def test_each_backend_sees_only_the_callers_values(hub, people):
    alice_stdio, alice_http = await _whoami(hub, *people["alice"])
    bob_stdio, bob_http = await _whoami(hub, *people["bob"])

    assert alice_stdio["token"] == ALICE["TOKEN"] and bob_stdio["token"] == BOB["TOKEN"]
    assert alice_http == {
        "header": ALICE["TOKEN"],
        "key": ALICE["KEY"],
    }  # the query value is URL-encoded, arrives whole
    assert bob_http == {"header": BOB["TOKEN"], "key": BOB["KEY"]}
    assert alice_stdio["pid"] != bob_stdio["pid"], "each user gets their own stdio child"


async def test_changing_alices_values_reconnects_only_her(hub, people, alice, stdio_server):
    alice_before, _ = await _whoami(hub, *people["alice"])
    bob_before, _ = await _whoami(hub, *people["bob"])

    await sync_to_async(save_credentials)(
        user=alice, server=stdio_server, values={"TOKEN": "alice-rotated"}
    )
    alice_after, _ = await _whoami(hub, *people["alice"])
    bob_after, _ = await _whoami(hub, *people["bob"])

    assert alice_after["token"] == "alice-rotated" and alice_after["pid"] != alice_before["pid"]
    assert bob_after == bob_before, "bob keeps his process and his value"


async def test_charlie_without_credentials_is_told_what_to_fill_and_where(hub, people):
    async with mcp_client(hub.url(people["charlie"][0]), people["charlie"][1]) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        stdio = await client.call_tool("wstdio__whoami", {})
        http = await client.call_tool("whttp__whoami", {})

    assert {"wstdio__whoami", "whttp__whoami"} <= names, "the tools stay listed"
    assert stdio.is_error and http.is_error
    stdio_text, http_text = stdio.content[0].text, http.content[0].text
    assert "wstdio needs your credentials: fill TOKEN (Your API token)" in stdio_text
    assert (
        "/servers/wstdio/credentials/" in stdio_text
        and "PUT /api/servers/wstdio/my-credentials/" in stdio_text
    )
    assert "fill TOKEN, KEY" in http_text and "/servers/whttp/credentials/" in http_text
    for value in (*ALICE.values(), *BOB.values()):
        assert value not in stdio_text + http_text


async def test_removing_her_values_stops_alices_calls_at_once(hub, people, alice, http_server):
    from apps.credentials.services import delete_credentials

    await sync_to_async(delete_credentials)(user=alice, server=http_server)
    async with mcp_client(hub.url(people["alice"][0]), people["alice"][1]) as client:
        result = await client.call_tool("whttp__whoami", {})

    assert result.is_error and "whttp needs your credentials" in result.content[0].text
