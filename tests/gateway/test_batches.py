"""JSON-RPC batches: accepted on 2025-03-26 sessions (the one version that had them), refused after."""

from __future__ import annotations

import json

import httpx2
import pytest

from tests.live_hub import RAW_HEADERS, raw_session

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def test_a_2025_03_26_client_sends_a_batch(hub, alice_endpoint, alice_hub_token):
    batch = [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 2, "b": 3}},
        },
        {"jsonrpc": "2.0", "id": "two", "method": "ping"},
        {"jsonrpc": "2.0", "id": 3, "method": "no/such/method"},
        {"jsonrpc": "1.0", "id": 4, "method": "ping"},
    ]
    async with httpx2.AsyncClient(timeout=30) as http:
        headers = await raw_session(
            http, hub.url(alice_endpoint.path), alice_hub_token, version="2025-03-26"
        )
        response = await http.post(
            hub.url(alice_endpoint.path), content=json.dumps(batch), headers=headers
        )
        only_notifications = await http.post(
            hub.url(alice_endpoint.path),
            content=json.dumps([{"jsonrpc": "2.0", "method": "notifications/initialized"}]),
            headers=headers,
        )

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    answers = response.json()
    by_id = {answer["id"]: answer for answer in answers}
    assert len(answers) == 4
    assert by_id[1]["result"]["structuredContent"]["result"] == 5
    assert by_id["two"]["result"] == {}
    assert by_id[3]["error"]["code"] == -32601
    assert by_id[None]["error"]["code"] == -32600
    assert only_notifications.status_code == 202


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_later_versions_refuse_batches(hub, alice_endpoint, alice_hub_token, version):
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    ]
    async with httpx2.AsyncClient(timeout=30) as http:
        headers = await raw_session(
            http, hub.url(alice_endpoint.path), alice_hub_token, version=version
        )
        response = await http.post(
            hub.url(alice_endpoint.path), content=json.dumps(batch), headers=headers
        )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600
    assert version in response.json()["error"]["message"]


async def test_an_empty_or_oversized_batch_is_refused(hub, alice_endpoint, alice_hub_token):
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    async with httpx2.AsyncClient(timeout=30) as http:
        headers = await raw_session(
            http, hub.url(alice_endpoint.path), alice_hub_token, version="2025-03-26"
        )
        empty = await http.post(hub.url(alice_endpoint.path), content="[]", headers=headers)
        huge = await http.post(
            hub.url(alice_endpoint.path), content=json.dumps([ping] * 101), headers=headers
        )
    assert empty.status_code == huge.status_code == 400
    assert "empty" in empty.json()["error"]["message"]
    assert "101" in huge.json()["error"]["message"]


async def test_a_batch_without_a_session_is_refused(hub, alice_endpoint, alice_hub_token):
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}]
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.post(
            hub.url(alice_endpoint.path),
            content=json.dumps(batch),
            headers={**RAW_HEADERS, "Authorization": f"Bearer {alice_hub_token}"},
        )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600


async def test_a_batch_whose_calls_report_progress_is_answered_as_one_stream(
    hub, alice_endpoint, alice_hub_token
):
    from tests.live_hub import sse_messages

    batch = [
        {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {
                "name": "progress",
                "arguments": {"steps": 3},
                "_meta": {"progressToken": f"p{n}"},
            },
        }
        for n in (1, 2)
    ]
    async with httpx2.AsyncClient(timeout=30) as http:
        headers = await raw_session(
            http, hub.url(alice_endpoint.path), alice_hub_token, version="2025-03-26"
        )
        async with http.stream(
            "POST", hub.url(alice_endpoint.path), content=json.dumps(batch), headers=headers
        ) as response:
            content_type = response.headers["content-type"]
            messages = [message async for _, message in sse_messages(response)]

    assert content_type.startswith("text/event-stream")
    progress = sorted(
        (m["params"]["progressToken"], m["params"]["progress"])
        for m in messages
        if m.get("method") == "notifications/progress"
    )
    assert progress == [("p1", 1), ("p1", 2), ("p1", 3), ("p2", 1), ("p2", 2), ("p2", 3)]
    answers = {m["id"]: m["result"]["content"][0]["text"] for m in messages if "id" in m}
    assert answers == {1: "progressed", 2: "progressed"}
