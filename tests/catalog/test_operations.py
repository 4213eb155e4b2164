"""An admin keeps an eye on real backends: discovers them, checks their health, reads their stderr."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from apps.catalog import operations
from apps.catalog.models import McpServer
from apps.connections.errors import ServerCrashed
from tests.catalog.conftest import echo_args, tiny_args
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio]

check_health = sync_to_async(operations.check_health)
discover_now = sync_to_async(operations.discover_now)
live_state = sync_to_async(operations.live_state)


async def _save(server: McpServer, **fields) -> None:
    for name, value in fields.items():
        setattr(server, name, value)
    await sync_to_async(server.save)()


async def test_discover_now_fills_the_catalog_from_the_real_echo_server(shared_pool, make_server):
    server = await sync_to_async(make_server)("echo", echo_args())

    outcome = await discover_now(server=server)

    assert outcome.ok, outcome.error
    assert {"echo", "add", "touch_tools"} <= set(
        await sync_to_async(lambda: set(server.tools.values_list("name", flat=True)))()
    )
    assert outcome.report.counts["prompts"] == 1
    await sync_to_async(server.refresh_from_db)()
    assert server.status == McpServer.Status.HEALTHY


async def test_a_broken_command_is_down_with_its_error_then_healthy_once_fixed(
    shared_pool, make_server
):
    server = await sync_to_async(make_server)("tiny", tiny_args())
    first = await check_health(server=server)
    assert first.status == McpServer.Status.HEALTHY, first

    await _save(server, args=tiny_args("--fail", "cannot open the database"))
    broken = await check_health(server=server)
    await sync_to_async(server.refresh_from_db)()
    assert broken.status == server.status == McpServer.Status.DOWN
    assert "cannot open the database" in server.last_error
    failed_discovery = await discover_now(server=server)
    assert not failed_discovery.ok and "cannot open the database" in failed_discovery.error

    await _save(server, args=tiny_args())
    fixed = await check_health(server=server)
    await sync_to_async(server.refresh_from_db)()
    assert fixed.status == server.status == McpServer.Status.HEALTHY
    assert server.last_error == "" and server.last_ok_at is not None and fixed.round_trip_ms < 2000


async def test_a_server_whose_calls_crash_is_degraded_not_healthy(shared_pool, make_server):
    server = await sync_to_async(make_server)("tiny", tiny_args())
    await check_health(server=server)

    with pytest.raises(ServerCrashed):
        await pool_call(server, "crash")
    verdict = await check_health(server=server)

    assert verdict.status == McpServer.Status.DEGRADED
    assert "1 connection failure(s) since the previous check" in verdict.reason
    assert (await check_health(server=server)).status == McpServer.Status.HEALTHY  # it recovered


async def test_a_slow_ping_is_degraded(shared_pool, make_server, settings):
    server = await sync_to_async(make_server)("tiny", tiny_args())
    settings.MCPHUB_HEALTH_SLOW_MS = 0

    verdict = await check_health(server=server)

    assert verdict.status == McpServer.Status.DEGRADED and "ping took" in verdict.reason
    await sync_to_async(server.refresh_from_db)()
    assert server.status == McpServer.Status.DEGRADED and server.last_ok_at is not None


async def test_stderr_tail_and_counters_come_from_the_live_connection(shared_pool, make_server):
    server = await sync_to_async(make_server)("noisy", tiny_args("--stderr-lines", "3"))
    await check_health(server=server)

    live = await live_state(server_name="noisy")

    assert live.error == ""
    assert "3" in live.stderr or live.stderr.count("\n") >= 2
    stats = live.stats
    assert (stats.state, stats.open_sessions, stats.live_processes, stats.restarts) == (
        "open",
        1,
        1,
        0,
    )
    assert stats.calls >= 1


async def test_disabling_a_server_closes_its_connection(shared_pool, make_server):
    server = await sync_to_async(make_server)("tiny", tiny_args())
    await check_health(server=server)
    assert (await live_state(server_name="tiny")).stats.live_processes == 1

    await _save(server, enabled=False)

    await eventually_async(
        sync_to_async(lambda: operations.live_state(server_name="tiny").stats.live_processes == 0),
        timeout=20,
        what="the disabled server's connection to close",
    )


async def test_a_disabled_server_can_be_tested_and_is_closed_again(shared_pool, make_server):
    server = await sync_to_async(make_server)("tiny", tiny_args(), enabled=False)

    verdict = await check_health(server=server)

    assert verdict.status == McpServer.Status.HEALTHY
    assert (await live_state(server_name="tiny")).stats.live_processes == 0


async def pool_call(server: McpServer, tool: str):
    """A tool call through the same pool the operations use (the gateway's path)."""
    spec = server.to_spec()
    return await sync_to_async(operations.run_on_pool)(lambda pool: pool.call_tool(spec, tool, {}))
