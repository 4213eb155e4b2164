"""A dynamic session's loaded tools belong to the session, not to a connection or a process:
the client reconnects (or a load balancer sends it to another web process) and finds them again."""

from __future__ import annotations

import json

import httpx2
import pytest
from django.conf import settings

from apps.toolsets.services import update_endpoint
from tests.live_hub import free_port, hub_env, start_web, stop, wait_healthy

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def dynamic_endpoint(alice, echo_server):
    return update_endpoint(endpoint=alice.endpoints.get(), mode="dynamic")


@pytest.fixture
def second_web(hub, tmp_path_factory):
    if not settings.REDIS_URL:
        pytest.skip("sessions are shared through Redis; embedded mode is one process")
    port = free_port()
    process = start_web(port, hub_env(), tmp_path_factory.mktemp("web-b"), name="web-b")
    try:
        wait_healthy(f"http://127.0.0.1:{port}", [process])
        yield f"http://127.0.0.1:{port}"
    finally:
        stop([process])


def _rpc(method: str, params: dict, request_id: int) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


async def _session(base: str, path: str, token: str) -> dict[str, str]:
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    init = _rpc(
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
        1,
    )
    async with httpx2.AsyncClient(timeout=30) as http:
        first = await http.post(base + path, content=init, headers=headers)
    return {
        **headers,
        "Mcp-Session-Id": first.headers["mcp-session-id"],
        "MCP-Protocol-Version": "2025-11-25",
        "Accept": "application/json",
    }


async def _listed(base: str, path: str, headers: dict[str, str]) -> set[str]:
    async with httpx2.AsyncClient(timeout=30) as http:  # a new connection each time: a reconnect
        response = await http.post(base + path, content=_rpc("tools/list", {}, 3), headers=headers)
    return {t["name"] for t in response.json()["result"]["tools"]}


async def _load(base: str, path: str, headers: dict[str, str], name: str) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.post(
            base + path,
            content=_rpc("tools/call", {"name": "load_tools", "arguments": {"names": [name]}}, 2),
            headers=headers,
        )
    assert response.json()["result"]["structuredContent"]["loaded"] == [name]


async def test_loaded_tools_survive_a_reconnect(hub, dynamic_endpoint, alice_hub_token):
    path = dynamic_endpoint.path
    headers = await _session(hub.base_url, path, alice_hub_token)
    other = await _session(hub.base_url, path, alice_hub_token)
    await _load(hub.base_url, path, headers, "add")

    assert "add" in await _listed(hub.base_url, path, headers)
    assert "add" not in await _listed(hub.base_url, path, other)  # per session, not per endpoint


async def test_another_web_process_serves_the_loaded_set(
    hub, second_web, dynamic_endpoint, alice_hub_token
):
    path = dynamic_endpoint.path
    headers = await _session(hub.base_url, path, alice_hub_token)
    await _load(hub.base_url, path, headers, "echo")
    await _load(second_web, path, headers, "add")

    assert {"echo", "add"} <= await _listed(second_web, path, headers)
    assert {"echo", "add"} <= await _listed(hub.base_url, path, headers)
