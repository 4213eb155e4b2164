"""Any web process serves any request of a session: two web processes take turns on one session."""

from __future__ import annotations

import json

import httpx2
import pytest
from django.conf import settings

from tests.live_hub import free_port, hub_env, start_web, stop, wait_healthy

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not settings.REDIS_URL,
        reason="sessions are shared through Redis; embedded mode is one process",
    ),
]


@pytest.fixture(scope="module")
def second_web(hub, tmp_path_factory):
    port = free_port()
    process = start_web(port, hub_env(), tmp_path_factory.mktemp("web-b"), name="web-b")
    try:
        wait_healthy(f"http://127.0.0.1:{port}", [process])
        yield f"http://127.0.0.1:{port}"
    finally:
        stop([process])


def _rpc(method: str, params: dict | None = None, request_id: int = 1) -> dict:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


async def test_two_web_processes_serve_one_session_alternately(
    hub, second_web, alice_endpoint, alice_hub_token
):
    bases = [hub.base_url, second_web]
    headers = {
        "Authorization": f"Bearer {alice_hub_token}",
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
    )
    async with httpx2.AsyncClient(timeout=30) as http:
        first = await http.post(
            bases[0] + alice_endpoint.path, content=json.dumps(init), headers=headers
        )
        headers["Mcp-Session-Id"] = first.headers["mcp-session-id"]
        headers["MCP-Protocol-Version"] = "2025-11-25"
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (
            await http.post(
                bases[1] + alice_endpoint.path, content=json.dumps(initialized), headers=headers
            )
        ).status_code == 202
        answers = []
        for turn in range(4):
            call = _rpc(
                "tools/call",
                {"name": "add", "arguments": {"a": turn, "b": 10}},
                request_id=turn + 2,
            )
            response = await http.post(
                bases[turn % 2] + alice_endpoint.path, content=json.dumps(call), headers=headers
            )
            answers.append(response.json()["result"]["structuredContent"]["result"])
        deleted = await http.delete(bases[1] + alice_endpoint.path, headers=headers)
        after = await http.post(
            bases[0] + alice_endpoint.path,
            content=json.dumps(_rpc("tools/list", request_id=9)),
            headers=headers,
        )

    assert answers == [10, 11, 12, 13]
    assert deleted.status_code == 200
    assert after.status_code == 404
