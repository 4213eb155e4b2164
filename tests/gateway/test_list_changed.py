"""Alice toggles a tool on the Tools page (the API): her connected clients are told at once."""

from __future__ import annotations

import asyncio

import httpx2
import pytest

from tests.live_hub import mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


def _collector():
    seen: list[str] = []
    changed = asyncio.Event()

    async def handler(message) -> None:
        method = getattr(getattr(message, "root", message), "method", None) or getattr(
            message, "method", None
        )
        if method:
            seen.append(method)
        if method == "notifications/tools/list_changed":
            changed.set()

    return handler, changed


async def _toggle(hub, endpoint, token: str, key: str, enabled: bool) -> None:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
        response = await http.patch(
            hub.url(f"/api/endpoints/{endpoint.slug}/tools/{key}/"), json={"enabled": enabled}
        )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_toggling_a_tool_pushes_list_changed_and_the_new_list(
    hub, alice_endpoint, alice_hub_token, transport
):
    handler, changed = _collector()
    path = alice_endpoint.path + ("sse" if transport == "sse" else "")

    async with mcp_client(
        hub.url(path), alice_hub_token, transport=transport, message_handler=handler
    ) as client:
        before = {t.name for t in (await client.list_tools()).tools}
        await asyncio.sleep(0.5)  # let the client open its notification stream
        await _toggle(hub, alice_endpoint, alice_hub_token, "echo.echo", False)
        await asyncio.wait_for(changed.wait(), 10)
        after = {t.name for t in (await client.list_tools()).tools}

    assert "echo" in before
    assert before - after == {"echo"}


async def test_a_2026_client_hears_changes_through_subscriptions_listen(
    hub, alice_endpoint, alice_hub_token
):
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token, mode="auto") as client:
        before = {t.name for t in (await client.list_tools()).tools}
        async with client.listen(tools_list_changed=True) as subscription:
            await _toggle(hub, alice_endpoint, alice_hub_token, "echo.add", False)
            event = await asyncio.wait_for(anext(aiter(subscription)), 10)
        after = {t.name for t in (await client.list_tools()).tools}

    assert type(event).__name__ == "ToolsListChanged"
    assert before - after == {"add"}
