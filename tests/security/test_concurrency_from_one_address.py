"""Many MCP clients behind one address (an agent calling in parallel, a team behind one proxy) are
served: only requests still arriving past a bound count against the address's slow-request slots,
never requests being served, slow tool calls or open streams. Against the session's real hub."""

from __future__ import annotations

import anyio
import pytest

from tests.gateway.conftest import (  # noqa: F401 - fixtures shared with the gateway tests
    _close_thread_connections,
    alice_endpoint,
    alice_hub_token,
    anyio_backend,
    echo_discovery,
    echo_server,
)
from tests.live_hub import mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

SESSIONS = 48  # three times MCPHUB_MAX_SLOW_REQUESTS_PER_CLIENT's default
REFUSED = "requests still arriving"  # the guard's log line for a refusal


async def test_48_sessions_from_one_address_with_slow_calls_and_open_streams_are_all_served(
    hub, alice_endpoint, alice_hub_token
):
    refusals_before = hub.log().count(REFUSED)
    results: dict[int, list[str]] = {}
    failures: dict[int, str] = {}
    all_open = anyio.Event()
    waiting = 0

    async def barrier() -> None:
        nonlocal waiting
        waiting += 1
        if waiting == SESSIONS:
            all_open.set()
        await all_open.wait()

    async def session(n: int) -> None:
        try:
            # The SDK's client opens its GET stream for server messages after initialize, and keeps it open.
            async with mcp_client(
                hub.url(alice_endpoint.path), alice_hub_token, cache=None
            ) as client:
                await barrier()  # every session (and its stream) is open before any call
                echoed = [
                    (await client.call_tool("echo", {"text": f"{n}-{i}"})).content[0].text
                    for i in range(3)
                ]
                if n % 3 == 0:  # a long tool call in flight beside the others
                    echoed.append((await client.call_tool("slow", {"seconds": 2})).content[0].text)
                results[n] = echoed
        except Exception as error:  # noqa: BLE001 - every session's fate is reported below
            failures[n] = repr(error)
            if not all_open.is_set():
                await barrier()

    with anyio.fail_after(240):
        async with anyio.create_task_group() as tg:
            for n in range(SESSIONS):
                tg.start_soon(session, n)

    refusals = [line for line in hub.log().splitlines() if REFUSED in line][refusals_before:]
    assert (failures, refusals) == ({}, [])
    assert all(texts[:3] == [f"{n}-{i}" for i in range(3)] for n, texts in results.items())
