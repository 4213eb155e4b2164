"""Embedded (one web process runs everything): the process SIGKILLed mid-turn and started again;
the new process continues the turn by itself, and a page that reconnects (resume after the last
event it saw) gets "recovering…" and the rest of the answer without sending anything again."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
import websockets
from django.conf import settings

from tests.chat.conftest import Api, chat_socket
from tests.chat.healing import ROUNDS, Counter
from tests.live_hub import (
    HubProcesses,
    free_port,
    hub_env,
    start_private_hub,
    start_web,
    stop,
    wait_healthy,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
    pytest.mark.skipif(bool(settings.REDIS_URL), reason="the embedded shape"),
]


async def test_the_restarted_process_continues_the_turn_and_a_reconnected_page_sees_it(
    tmp_path, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.responder = Counter()
    hub = start_private_hub(tmp_path / "hub", redis_url=None)
    try:
        async with Api(hub.base_url, alice_hub_token) as api:
            conversation = await api.new_conversation()
        try:
            async with chat_socket(hub, conversation, alice_hub_token) as first:
                await first.send("message", {"text": "Count slowly in here"})
                await first.until("tool_result")
                await first.until("tool_result")
                os.killpg(hub.processes[0].pid, signal.SIGKILL)
                await asyncio.to_thread(hub.processes[0].wait, 30)
                while True:
                    await first.next(5)
        except (websockets.ConnectionClosed, TimeoutError):
            pass
        port = free_port()
        env = hub_env(embedded=True, MCPHUB_DATA_DIR=str(tmp_path / "hub"))
        hub.processes[0] = start_web(port, env, tmp_path / "hub", name="web2")
        again = HubProcesses(f"http://127.0.0.1:{port}", hub.processes, tmp_path / "hub")
        await asyncio.to_thread(wait_healthy, again.base_url, hub.processes)
        async with chat_socket(again, conversation, alice_hub_token) as second:
            await second.send("resume", {"after": first.events[-1]["seq"]})
            recovering = await second.until("status", timeout=60, state="recovering")
            end = await second.until("end", timeout=60)
    finally:
        stop(hub.processes)

    assert "Recovering" in recovering["payload"]["message"]
    assert end["payload"]["status"] == "complete"
    events = first.events + second.events
    assert not [e for e in second.events if e["type"] == "user_message"]  # nobody sent again
    results = [e["payload"]["content"][0]["text"] for e in events if e["type"] == "tool_result"]
    assert results == [str(n) for n in range(1, ROUNDS + 1)]
    numbers = [e["seq"] for e in events if e["seq"] is not None]
    assert numbers == list(range(1, len(numbers) + 1))
    assert second.text().endswith(f"Counted to {ROUNDS}")
