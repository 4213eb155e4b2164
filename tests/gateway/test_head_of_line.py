"""Through the hub (both shapes): alice's instant tool answers while 70 slow calls run on the same backend."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.live_hub import mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60), pytest.mark.django_db(transaction=True)]


async def test_an_instant_call_does_not_queue_behind_70_slow_ones(
    hub, alice_endpoint, alice_hub_token
):
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        await client.call_tool("echo", {"text": "warm"})
        slow = [asyncio.ensure_future(client.call_tool("slow", {"seconds": 4})) for _ in range(70)]
        await asyncio.sleep(0.5)  # the slow calls reach the backend (nothing to watch for it here)
        took = []
        for i in range(10):
            started = time.monotonic()
            assert (await client.call_tool("echo", {"text": str(i)})).content[0].text == str(i)
            took.append(time.monotonic() - started)
        still_running = sum(not c.done() for c in slow)
        results = await asyncio.gather(*slow)

    assert still_running == 70, "the instant calls must have run while the slow ones did"
    assert [r.is_error for r in results] == [False] * 70
    assert max(took) < 1.0, f"an instant call took {max(took):.2f}s"
