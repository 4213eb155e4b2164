"""Alice and bob-like sessions subscribe to a backend's resource, each through a different web
process: the backend's update reaches both, once each, and no session that did not subscribe."""

from __future__ import annotations

import asyncio
import json
import sys

import httpx2
import pytest
from django.conf import settings

from apps.catalog.introspection import discover_server
from apps.catalog.models import McpServer
from apps.toolsets.services import enable_tools
from tests.live_hub import SERVERS, another_web, raw_session, sse_messages
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]

BOARD = "note://board"


@pytest.fixture(scope="module")
def second_web(hub, tmp_path_factory):
    """Production: another web process; embedded: the one process again."""
    if not settings.REDIS_URL:
        yield hub.base_url
        return
    with another_web(tmp_path_factory.mktemp("web-b")) as base_url:
        yield base_url


@pytest.fixture
def notes_endpoint(alice, transactional_db):
    server = McpServer.objects.create(
        name="notes", command=sys.executable, args=[str(SERVERS / "notes.py")]
    )
    discover_server(server=server)
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=server.tools.all())
    return endpoint


def _rpc(request_id: int, method: str, params: dict) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


async def _listen(
    http, url: str, headers: dict[str, str], opened: asyncio.Event, heard: list[dict]
) -> None:
    async with http.stream("GET", url, headers=headers) as response:
        opened.set()  # the headers arrive once this process listens for the session
        async for _, message in sse_messages(response):
            if (
                message.get("method") == "notifications/resources/updated"
            ):  # not the catalog's list_changed
                heard.append(message)


async def test_an_update_reaches_every_subscribed_session_on_any_web_process(
    hub, second_web, notes_endpoint, alice_hub_token
):
    urls = {"a": hub.base_url + notes_endpoint.path, "b": second_web + notes_endpoint.path}
    heard: dict[str, list[dict]] = {"a": [], "b": [], "bystander": []}
    async with httpx2.AsyncClient(timeout=30) as http:
        sessions = {
            "a": await raw_session(http, urls["a"], alice_hub_token),
            "b": await raw_session(http, urls["b"], alice_hub_token),
            "bystander": await raw_session(http, urls["a"], alice_hub_token),
        }
        opened = {name: asyncio.Event() for name in sessions}
        streams = [
            asyncio.create_task(
                _listen(http, urls["b" if name == "b" else "a"], headers, opened[name], heard[name])
            )
            for name, headers in sessions.items()
        ]
        await asyncio.wait_for(asyncio.gather(*(event.wait() for event in opened.values())), 20)
        for name in ("a", "b"):
            answer = await http.post(
                urls[name],
                content=_rpc(1, "resources/subscribe", {"uri": BOARD}),
                headers=sessions[name],
            )
            assert answer.json()["result"] == {}, answer.text
        written = await http.post(
            urls["b"],
            content=_rpc(2, "tools/call", {"name": "write", "arguments": {"text": "hello"}}),
            headers=sessions["b"],
        )
        assert written.json()["result"]["content"][0]["text"] == "written"
        await eventually_async(lambda: heard["a"] and heard["b"], timeout=10)
        await asyncio.sleep(0.5)  # time for a duplicate, or a stray update to the bystander
        for stream in streams:
            stream.cancel()
        read = await http.post(
            urls["a"], content=_rpc(3, "resources/read", {"uri": BOARD}), headers=sessions["a"]
        )

    update = {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": BOARD},
    }
    assert heard["a"] == [update]
    assert heard["b"] == [update]
    assert heard["bystander"] == []
    assert read.json()["result"]["contents"][0]["text"] == "hello"


async def test_an_unsubscribed_session_hears_no_more(hub, notes_endpoint, alice_hub_token):
    url = hub.base_url + notes_endpoint.path
    heard: list[dict] = []
    async with httpx2.AsyncClient(timeout=30) as http:
        headers = await raw_session(http, url, alice_hub_token)
        opened = asyncio.Event()
        stream = asyncio.create_task(_listen(http, url, headers, opened, heard))
        await asyncio.wait_for(opened.wait(), 20)
        await http.post(
            url, content=_rpc(1, "resources/subscribe", {"uri": BOARD}), headers=headers
        )
        await http.post(
            url, content=_rpc(2, "resources/unsubscribe", {"uri": BOARD}), headers=headers
        )
        await http.post(
            url,
            content=_rpc(3, "tools/call", {"name": "write", "arguments": {"text": "quiet"}}),
            headers=headers,
        )
        await asyncio.sleep(1)  # time for an update that must not come
        stream.cancel()
    assert heard == []


async def test_subscribing_to_an_unknown_resource_is_an_error(hub, notes_endpoint, alice_hub_token):
    url = hub.base_url + notes_endpoint.path
    async with httpx2.AsyncClient(timeout=30) as http:
        headers = await raw_session(http, url, alice_hub_token)
        answer = await http.post(
            url, content=_rpc(1, "resources/subscribe", {"uri": "note://nope"}), headers=headers
        )
    assert answer.json()["error"]["code"] == -32002


async def test_an_update_made_while_the_stream_was_down_arrives_on_resuming(
    hub, notes_endpoint, alice_hub_token
):
    url = hub.base_url + notes_endpoint.path
    first: list[tuple[str, dict]] = []
    async with httpx2.AsyncClient(timeout=30) as http:
        headers = await raw_session(http, url, alice_hub_token)
        await http.post(
            url, content=_rpc(1, "resources/subscribe", {"uri": BOARD}), headers=headers
        )
        async with http.stream("GET", url, headers=headers) as response:
            await http.post(
                url,
                content=_rpc(2, "tools/call", {"name": "write", "arguments": {"text": "one"}}),
                headers=headers,
            )
            async for event_id, message in sse_messages(response):
                if message.get("method") == "notifications/resources/updated":
                    first.append((event_id, message))
                    break  # the stream drops
        await asyncio.sleep(1.1)  # past the claim window: a distinct update
        await http.post(
            url,
            content=_rpc(3, "tools/call", {"name": "write", "arguments": {"text": "two"}}),
            headers=headers,
        )
        resumed: list[dict] = []
        async with http.stream(
            "GET", url, headers={**headers, "Last-Event-ID": first[0][0]}
        ) as response:
            async for _, message in sse_messages(response):
                if message.get("method") == "notifications/resources/updated":
                    resumed.append(message)
                    break

    assert first[0][0]
    assert resumed == [
        {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": BOARD}}
    ]
