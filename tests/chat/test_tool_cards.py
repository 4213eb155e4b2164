"""A chat turn's tool cards carry what MCP does: the call's progress and log messages while it runs,
then structured content and images, from real backends (server-everything and the echo server)."""

from __future__ import annotations

import asyncio

import pytest

from tests.chat.conftest import Api, chat_socket
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


async def test_progress_then_structured_content_and_an_image_from_server_everything(
    hub, llm, alice_provider, everything_endpoint, alice_hub_token
):
    llm.script(
        [
            Reply(
                tool_calls=[
                    ("p1", "trigger-long-running-operation", {"duration": 2, "steps": 4}),
                    ("s1", "get-structured-content", {"location": "Chicago"}),
                    ("i1", "get-tiny-image", {}),
                ]
            ),
            Reply(text=["All three done."]),
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "Run them"})
            await chat.until("end")

    progress = [e["payload"] for e in chat.of("tool_progress")]
    # The steps arrive while the call runs, before its result, and never go backwards.
    assert progress and all(p["id"] == "p1" and p["total"] == 4 for p in progress)
    assert [p["progress"] for p in progress] == sorted(p["progress"] for p in progress)
    assert progress[-1]["progress"] == 4
    order = [(e["type"], e["payload"].get("id")) for e in chat.events]
    assert order.index(("tool_progress", "p1")) < order.index(("tool_result", "p1"))
    results = {e["payload"]["id"]: e["payload"] for e in chat.of("tool_result")}
    assert set(results["s1"]["structuredContent"]) == {"temperature", "conditions", "humidity"}
    image = next(c for c in results["i1"]["content"] if c["type"] == "image")
    assert image["mimeType"] == "image/png" and len(image["data"]) > 100
    # The model is told of the image, not sent its base64.
    told = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert any("[image image/png]" in text for text in told)


async def test_a_calls_log_messages_and_progress_messages_reach_its_card(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.script(
        [
            Reply(tool_calls=[("c1", "chatty", {"count": 3}), ("c2", "progress", {"steps": 2})]),
            Reply(text=["ok"]),
        ]
    )
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "talk"})
            await chat.until("end")
        # A reload shows the same: the events are stored.
        async with chat_socket(hub, conversation, alice_hub_token) as again:
            await again.send("resume", {"after": 0})
            await again.until("end")

    logs = [e["payload"] for e in chat.of("tool_log")]
    assert [(log["id"], log["level"], log["data"]) for log in logs] == [
        ("c1", "info", "line 0"),
        ("c1", "info", "line 1"),
        ("c1", "info", "line 2"),
    ]
    progress = chat.of("tool_progress")
    assert progress[-1]["payload"] == {"id": "c2", "progress": 2, "total": 2, "message": "step 2"}
    assert [e["payload"] for e in again.of("tool_log")] == logs


async def test_a_run_takes_resources_along_and_streams_its_calls_progress(
    hub, llm, alice_provider, everything_endpoint, alice_hub_token
):
    import json

    import websockets

    from tests.chat.runs.conftest import start_run, wait_run

    llm.script(
        [
            Reply(
                tool_calls=[("p1", "trigger-long-running-operation", {"duration": 1, "steps": 4})]
            ),
            Reply(text=["Finished."]),
        ]
    )
    uri = "demo://resource/dynamic/text/9"
    async with Api(hub.base_url, alice_hub_token) as api:
        refused = await api.client.post("/runs/", json={"task": "x", "resources": ["demo://no"]})
        run = await start_run(api, task="Work on this", resources=[uri])
        url = hub.url(f"/ws/runs/{run['id']}/").replace("http://", "ws://")
        headers = {"Authorization": f"Bearer {alice_hub_token}"}
        events = []
        async with websockets.connect(url, additional_headers=headers) as ws:
            await ws.send(json.dumps({"type": "resume", "payload": {"after": 0}}))
            while not events or events[-1]["type"] != "end":
                events.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
        done = await wait_run(api, run["id"])

    assert refused.status_code == 400 and "Unknown resource 'demo://no'" in refused.text
    assert done["status"] == "succeeded"
    task = llm.requests[0]["messages"][-1]["content"]
    assert task.startswith(f'Work on this\n\n<resource uri="{uri}">\nResource 9: ')
    progress = [e["payload"] for e in events if e["type"] == "tool_progress"]
    assert [p["progress"] for p in progress] == [1, 2, 3, 4]
    assert all(p["id"] == "p1" and p["total"] == 4 for p in progress)
