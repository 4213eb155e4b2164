"""An HTTP backend that restarts forgets the hub's session: the hub starts a new one, callers see nothing.

Per the MCP transport spec, a 404 for a request carrying a session id means the server no
longer knows the session; that request was never executed, so the pool retries it once on a
fresh session. Health, test and discovery go through the same path, so they agree with calls.
"""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async

from apps.catalog.models import McpServer
from apps.catalog.operations import check_health, discover_now
from apps.connections.pool import Pool
from apps.connections.specs import ServerSpec
from apps.toolsets.services import enable_tools
from tests.connections.conftest import text
from tests.gateway.conftest import _close_thread_connections  # noqa: F401 - autouse: asgiref's DB connection
from tests.live_hub import HttpBackend, mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]


@pytest.fixture(scope="module")
def backend():
    backend = HttpBackend().start()
    yield backend
    backend.stop()


async def test_calls_after_the_backend_restarted_run_on_a_new_session(backend):
    spec = ServerSpec("notes", transport="streamable_http", url=backend.url)
    async with Pool() as pool:
        assert text(await pool.call_tool(spec, "echo", {"text": "before"})) == "before"
        first_pid = (await pool.call_tool(spec, "pid")).structured_content["result"]

        await asyncio.to_thread(backend.restart)
        results = await asyncio.gather(*(pool.call_tool(spec, "pid") for _ in range(8)))

        assert (
            {r.structured_content["result"] for r in results}
            == {backend.process.pid}
            != {first_pid}
        )
        stats = (await pool.stats())["servers"]["notes"]
        assert stats["starts"] == 2, "all eight callers share the one new session"
        assert "no longer knows our session" in stats["last_error"]


@pytest.mark.django_db(transaction=True)
async def test_through_the_hub_a_restarted_backend_costs_alice_no_error(
    backend, pool_host, hub, alice, alice_token
):
    """Both shapes: the session's hub (its web process's pool, or its Celery worker's)."""
    server, endpoint = await sync_to_async(_alice_notes)(alice, backend.url)
    async with mcp_client(hub.url(endpoint.path), alice_token) as client:
        assert (await client.call_tool("echo", {"text": "before"})).content[0].text == "before"

        await asyncio.to_thread(backend.restart)
        results = await asyncio.gather(
            *(client.call_tool("echo", {"text": f"after {i}"}) for i in range(8))
        )

    assert [r.is_error for r in results] == [False] * 8, [r.content[0].text for r in results]
    verdict = await sync_to_async(check_health)(server=server)
    assert verdict.status == McpServer.Status.HEALTHY, verdict
    assert (await sync_to_async(discover_now)(server=server)).ok


def _alice_notes(alice, url: str):
    from apps.catalog.introspection import apply_discovery
    from apps.connections.default import run_with_pool

    server = McpServer.objects.create(name="notes", transport="streamable_http", url=url)
    apply_discovery(
        server=server, discovery=run_with_pool(lambda pool: pool.discover(server.to_spec()))
    )
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=server.tools.filter(name="echo"))
    return server, endpoint
