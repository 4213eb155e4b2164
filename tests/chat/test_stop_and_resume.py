"""Alice stops a turn mid-stream or mid-tool-call, and reconnects without losing an event."""

from __future__ import annotations

import asyncio

import pytest
import websockets
from django.conf import settings

from apps.chat.models import Message, Turn
from tests.chat.conftest import Api, chat_socket, db, seqs
from tests.live_hub import (
    HubProcesses,
    free_port,
    hub_env,
    mcp_client,
    start_web,
    stop,
    wait_healthy,
)
from tests.llm_server import Reply
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


async def test_stop_mid_stream_cancels_the_model_call(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.script([Reply(text=[f"word{i} " for i in range(200)], chunk_delay=0.05)])
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "talk a lot"})
            await chat.until("text")
            await chat.send("stop")
            end = await chat.until("end")

    assert end["payload"]["status"] == "stopped"
    assert await asyncio.to_thread(llm.wait_for_disconnects, 1, 10)
    turn = await db(lambda: Turn.objects.get(conversation_id=conversation))()
    assert turn.status == "stopped"
    # What the user saw streamed is kept as the assistant's (partial) message.
    saved = await db(
        lambda: Message.objects.get(conversation_id=conversation, role="assistant").text
    )()
    assert saved.startswith("word0") and saved == chat.text()


async def test_stop_mid_tool_call_cancels_it_at_the_backend(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        before = int((await client.call_tool("cancellations", {})).content[0].text)
    llm.script([Reply(tool_calls=[("c1", "slow", {"seconds": 30})])])
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "be slow"})
            await chat.until("status", state="tool")
            await asyncio.sleep(0.5)  # the slow call reaches the backend (nothing to watch for it)
            await chat.send("stop")
            end = await chat.until("end")
            # The conversation is free again: the next message starts a new turn.
            llm.script([Reply(text=["ok"])])
            await chat.send("message", {"text": "again"})
            second = await chat.until("end")

    assert end["payload"]["status"] == "stopped"
    assert second["payload"]["status"] == "complete"
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:

        async def cancelled() -> int:
            count = int((await client.call_tool("cancellations", {})).content[0].text)
            return count if count > before else 0

        after = await eventually_async(cancelled, timeout=5)
    assert after == before + 1
    # The stopped call is answered in the history the model gets next (providers require it).
    answered = [m for m in llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert answered and answered[0]["tool_call_id"] == "c1"


async def test_stop_through_the_api_cancels_the_tool_call_and_ends_the_turn(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token, charlie_hub_token
):
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        before = int((await client.call_tool("cancellations", {})).content[0].text)
    llm.script([Reply(tool_calls=[("c1", "slow", {"seconds": 30})])])
    async with (
        Api(hub.base_url, alice_hub_token) as api,
        Api(hub.base_url, charlie_hub_token) as charlie,
    ):
        conversation = await api.new_conversation()
        idle = await api.client.post(f"/conversations/{conversation}/stop/")
        assert idle.status_code == 409 and idle.json()["code"] == "idle"
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "be slow"})
            await chat.until("status", state="tool")
            await asyncio.sleep(0.5)  # the slow call reaches the backend (nothing to watch for it)
            # charlie cannot stop alice's turn: her conversation does not exist for him.
            assert (
                await charlie.client.post(f"/conversations/{conversation}/stop/")
            ).status_code == 404
            stopped = await api.client.post(f"/conversations/{conversation}/stop/")
            end = await chat.until("end", timeout=10)

    assert stopped.status_code == 202 and stopped.json()["status"] == "running"
    assert end["payload"]["status"] == "stopped"
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:

        async def cancelled() -> int:
            count = int((await client.call_tool("cancellations", {})).content[0].text)
            return count if count > before else 0

        after = await eventually_async(cancelled, timeout=5)
    assert after == before + 1


async def test_reconnect_with_resume_loses_and_repeats_nothing(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.script([Reply(text=[f"w{i} " for i in range(60)], chunk_delay=0.03)])
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as first:
            await first.send("message", {"text": "stream"})
            for _ in range(4):
                await first.next()
        await asyncio.sleep(0.5)  # events keep coming while nobody listens
        async with chat_socket(hub, conversation, alice_hub_token) as second:
            await second.send("resume", {"after": first.events[-1]["seq"]})
            await second.until("end")
        async with chat_socket(hub, conversation, alice_hub_token) as third:
            await third.send("resume", {"after": 0})
            await third.until("end")

    combined = seqs(first.events) + seqs(second.events)
    assert combined == list(range(1, len(combined) + 1))
    assert first.text() + second.text() == "".join(f"w{i} " for i in range(60))
    assert [(e["seq"], e["type"]) for e in third.events] == [
        (e["seq"], e["type"]) for e in first.events + second.events
    ]


async def test_a_second_message_during_a_turn_is_refused(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.script([Reply(text=["slow ", "answer"], delay=1.0)])
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "first"})
            await chat.send("message", {"text": "second"})
            refused = await chat.until("error")
            posted = await api.client.post(
                f"/conversations/{conversation}/messages/", json={"text": "third"}
            )
            await chat.until("end")

    assert refused["seq"] is None and "already running" in refused["payload"]["message"]
    assert posted.status_code == 409
    assert (
        await db(
            lambda: Message.objects.filter(conversation_id=conversation, role="user").count()
        )()
        == 1
    )


@pytest.mark.skipif(
    not settings.REDIS_URL, reason="embedded, the turn runs in the web process and ends with it"
)
async def test_resume_works_across_a_web_process_restart(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token, tmp_path
):
    llm.script([Reply(text=[f"w{i} " for i in range(80)], chunk_delay=0.05)])
    first_web = _web(tmp_path / "a")
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
    try:
        async with chat_socket(first_web, conversation, alice_hub_token) as first:
            await first.send("message", {"text": "stream"})
            for _ in range(5):
                await first.next()
            await asyncio.to_thread(stop, first_web.processes)  # the turn goes on in the worker
    except websockets.ConnectionClosed:
        pass
    second_web = _web(tmp_path / "b")
    try:
        async with chat_socket(second_web, conversation, alice_hub_token) as second:
            await second.send("resume", {"after": first.events[-1]["seq"]})
            await second.until("end")
    finally:
        await asyncio.to_thread(stop, second_web.processes)

    combined = seqs(first.events) + seqs(second.events)
    assert combined == list(range(1, len(combined) + 1))
    assert first.text() + second.text() == "".join(f"w{i} " for i in range(80))


def _web(log_dir) -> HubProcesses:
    log_dir.mkdir()
    port = free_port()
    process = start_web(port, hub_env(MCPHUB_DATA_DIR=str(log_dir)), log_dir)
    wait_healthy(f"http://127.0.0.1:{port}", [process])
    return HubProcesses(f"http://127.0.0.1:{port}", [process], log_dir)
