"""Run tests drive the session's real hub with the scripted LLM and the echo MCP server: the
worker (production shape) or the web process (embedded) executes the runs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chat.conftest import (  # noqa: F401 - fixtures shared with the chat tests
    Api,
    _close_thread_connections,
    alice_endpoint,
    alice_hub_token,
    alice_provider,
    anyio_backend,
    charlie_hub_token,
    echo_discovery,
    echo_server,
    llm,
)
from tests.waiting import eventually_async

FINISHED = ("succeeded", "failed", "cancelled", "interrupted")


async def start_run(api: Api, **fields: Any) -> dict[str, Any]:
    response = await api.client.post("/runs/", json=fields)
    assert response.status_code == 201, response.text
    return response.json()


async def wait_run(
    api: Api,
    run_id: str,
    *,
    until: tuple[str, ...] = FINISHED,
    rounds: int = 0,
    timeout: float = 60,
) -> dict[str, Any]:
    """The run's detail once its status is one of `until` (and it has at least `rounds` rounds)."""
    last: dict[str, Any] = {}

    async def arrived() -> dict[str, Any] | None:
        last.update((await api.client.get(f"/runs/{run_id}/")).json())
        return dict(last) if last["status"] in until and last["rounds"] >= rounds else None

    return await eventually_async(
        arrived,
        timeout=timeout,
        interval=0.1,
        what=lambda: f"the run to be {until}; still {last['status']} after {last['rounds']} rounds",
    )


@pytest.fixture
def hub_tools(alice_endpoint):
    """The built-in `hub` server in the catalog, its tools enabled on alice's endpoint."""
    from apps.gateway.hub_tools import ensure_hub_server
    from apps.toolsets.services import enable_tools

    server = ensure_hub_server()
    enable_tools(endpoint=alice_endpoint, tools=server.tools.all(), enforce_budget=False)
    return server
