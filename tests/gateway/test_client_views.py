"""What an MCP client shows of the hub: its name on every protocol version, an error it can read
for a request too large, and progress that means something."""

from __future__ import annotations

import pytest
from mcp import MCPError

from apps.chat.runs.models import Run
from apps.gateway.hub_tools import PLANNED_ROUNDS, _bound
from tests.live_hub import mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_client_shows_the_hubs_name_in_every_mode(
    hub, alice_endpoint, alice_hub_token, mode
):
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token, mode=mode) as client:
        await client.list_tools()
        info = client.server_info

    assert info is not None and (info.name, info.title) == ("mcphub", "MCP Hub")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_request_too_large_is_an_error_the_client_can_show(
    hub, alice_endpoint, alice_hub_token, mode
):
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token, mode=mode) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("echo", {"text": "x" * (5 * 1024 * 1024)})

    assert "larger than the hub accepts" in refused.value.error.message
    assert refused.value.error.data == {"reason": "payload_too_large", "limit": 4 * 1024 * 1024}


def test_progress_of_a_run_has_a_total_only_when_its_round_limit_is_a_plan():
    assert _bound(Run(max_rounds=12), 3) == (12.0, "Round 3 of at most 12")
    assert _bound(Run(max_rounds=PLANNED_ROUNDS * 10), 3) == (
        None,
        "Round 3",
    )  # the default 10000: a safety cap
