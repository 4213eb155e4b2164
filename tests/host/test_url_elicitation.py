"""Alice's client calls a tool of a server that needs her own credentials before she filled them:
a client that takes URL elicitation is sent to the hub's page for them (-32042) and hears when she
is done; a client that does not keeps the isError result that says the same in words."""

from __future__ import annotations

import json

import httpx2
import mcp_types as types
import pytest
from mcp import MCPError

from apps.toolsets.services import enable_tools
from tests.credentials.conftest import (  # noqa: F401 - fixtures shared with the credentials tests
    stdio_server,
    whoami_discovery,
    whoami_http_port,
)
from tests.live_hub import mcp_client
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


@pytest.fixture
def whoami_endpoint(alice, stdio_server):
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=stdio_server.tools.all())
    return endpoint


async def _decline(context, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


async def test_missing_credentials_are_a_url_elicitation_completed_when_alice_fills_them(
    hub, whoami_endpoint, alice_hub_token
):
    completed: list[str] = []

    async def heard(message) -> None:
        if isinstance(message, types.ElicitCompleteNotification):
            completed.append(message.params.elicitation_id)

    async with mcp_client(
        hub.url(whoami_endpoint.path),
        alice_hub_token,
        elicitation_callback=_decline,  # declares elicitation, form and URL modes
        message_handler=heard,
    ) as client:
        with pytest.raises(MCPError) as needed:
            await client.call_tool("whoami", {})
        headers = {"Authorization": f"Bearer {alice_hub_token}"}
        async with httpx2.AsyncClient(base_url=hub.base_url, headers=headers) as api:
            saved = await api.put(
                "/api/servers/wstdio/my-credentials/", json={"values": {"TOKEN": "alice-secret"}}
            )
        # The notification arrives on the session's GET stream.
        await eventually_async(lambda: completed, what="notifications/elicitation/complete")
        after = await client.call_tool("whoami", {})

    error = needed.value
    assert error.code == -32042
    [asked] = error.data["elicitations"]
    assert asked["mode"] == "url" and asked["url"].endswith("/servers/wstdio/credentials/")
    assert "wstdio needs your credentials: fill TOKEN" in asked["message"]
    assert saved.status_code == 200, saved.text
    assert completed == [asked["elicitationId"]]
    assert json.loads(after.content[0].text)["token"] == "alice-secret"


async def test_a_client_without_url_elicitation_keeps_the_clear_error(
    hub, whoami_endpoint, alice_hub_token
):
    async with mcp_client(hub.url(whoami_endpoint.path), alice_hub_token) as client:
        result = await client.call_tool("whoami", {})

    assert result.is_error
    assert "wstdio needs your credentials: fill TOKEN" in result.content[0].text
