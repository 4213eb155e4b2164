"""The catalog follows the world: a backend's list_changed, and an edited .mcp.json."""

from __future__ import annotations

import json
import logging
import sys

import pytest
from asgiref.sync import sync_to_async

from apps.catalog import operations, tasks, watch
from apps.catalog.models import McpServer, Tool
from tests.catalog.conftest import REDIS_MODE, echo_args, tiny_args
from tests.waiting import eventually, eventually_async


@pytest.mark.anyio
async def test_a_backend_announcing_list_changed_is_discovered_again(shared_pool, make_server):
    if not REDIS_MODE:  # embedded: the in-process pool gets its hook from settings.MCPHUB_POOL
        from apps.gateway import (
            subscriptions,
        )  # which relays resources/updated, then calls the catalog's

        assert shared_pool.on_notification is subscriptions.on_backend_notification
    server = await sync_to_async(make_server)("echo", echo_args())
    assert (await sync_to_async(operations.discover_now)(server=server)).ok
    # Pretend the backend dropped `add` last time: only a new discovery brings it back.
    await sync_to_async(Tool.objects.filter(server=server, name="add").update)(available=False)

    spec = server.to_spec()
    await sync_to_async(operations.run_on_pool)(
        lambda pool: pool.call_tool(spec, "touch_tools", {})
    )

    await eventually_async(
        sync_to_async(lambda: Tool.objects.get(server=server, name="add").available), timeout=20
    )


def test_other_backend_notifications_do_not_trigger_discovery(
    transactional_db, make_server, monkeypatch
):
    make_server("echo", echo_args())
    asked = []
    monkeypatch.setattr(tasks, "request_rediscovery", lambda **kw: asked.append(kw))
    listener = watch.EventsListener("redis://unused", "mcphub:pool")

    listener.handle(
        json.dumps({"s": "echo", "n": {"method": "notifications/message", "params": {}}})
    )
    listener.handle(
        json.dumps({"s": "echo", "n": {"method": "notifications/prompts/list_changed"}})
    )

    assert asked == [{"server_name": "echo"}]


def _write(path, servers: dict) -> None:
    path.write_text(json.dumps({"mcpServers": servers}))


def test_an_edited_mcp_json_is_imported_again_and_discovered(pool_host, make_server, tmp_path):
    config = tmp_path / ".mcp.json"
    _write(config, {"tiny": {"command": sys.executable, "args": tiny_args("--tag", "one")}})

    first = watch.reimport_if_changed(path=config)
    again = watch.reimport_if_changed(path=config)

    assert [c.action for c in first] == ["created"] and again is None
    tiny = McpServer.objects.get(name="tiny")
    eventually(lambda: tiny.tools.filter(name="argv").exists(), timeout=20)

    _write(config, {"tiny": {"command": sys.executable, "args": tiny_args("--tag", "two")}})
    changed = watch.reimport_if_changed(path=config)

    assert [(c.action, c.fields) for c in changed] == [("updated", ("args",))]
    tiny.refresh_from_db()
    assert tiny.args[-1] == "two"


def test_a_broken_mcp_json_logs_why_and_changes_nothing(pool_host, make_server, tmp_path, caplog):
    config = tmp_path / ".mcp.json"
    _write(config, {"tiny": {"command": sys.executable, "args": tiny_args()}})
    watch.reimport_if_changed(path=config)
    before = McpServer.objects.get(name="tiny").config_hash

    config.write_text('{"mcpServers": {"tiny": {"command": 42}, "other": {"url": "ftp://x"}}}')
    with caplog.at_level(logging.ERROR, logger="apps.catalog.watch"):
        result = watch.reimport_if_changed(path=config)

    assert result is None
    assert (
        "was not imported; nothing changed" in caplog.text
        and "tiny" in caplog.text
        and "other" in caplog.text
    )
    assert McpServer.objects.get(name="tiny").config_hash == before
    assert not McpServer.objects.filter(name="other").exists()
    caplog.clear()
    assert (
        watch.reimport_if_changed(path=config) is None and caplog.text == ""
    )  # said once, not every tick


def test_the_beat_task_watches_only_when_asked(transactional_db, tmp_path, settings):
    config = tmp_path / ".mcp.json"
    _write(config, {"tiny": {"command": sys.executable, "args": tiny_args()}})
    settings.MCP_JSON_PATH = str(config)
    settings.MCPHUB_WATCH_MCP_JSON = False

    watch.watch_mcp_json.apply().get()
    assert not McpServer.objects.filter(name="tiny").exists()

    settings.MCPHUB_WATCH_MCP_JSON = True
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the discovery it asks for runs here, not in a worker
    watch.watch_mcp_json.apply().get()
    assert McpServer.objects.filter(name="tiny").exists()


def test_the_events_listener_logs_one_line_per_redis_outage_and_listens_again(
    transactional_db, monkeypatch, tmp_path, caplog
):
    """A Redis restart: one line when lost, one when back (not one every half second), and
    list_changed from the pool workers reaches the catalog again afterwards."""
    import os
    import signal
    import time

    import redis

    from apps.connections.worker import DEFAULT_PREFIX, events_channel
    from tests.live_hub import free_port, start_redis

    asked = []
    monkeypatch.setattr(tasks, "request_rediscovery", lambda **kw: asked.append(kw))
    port = free_port()
    server = start_redis(port, tmp_path)
    listener = watch.EventsListener(f"redis://127.0.0.1:{port}/0", DEFAULT_PREFIX)
    changed = json.dumps({"s": "echo", "n": {"method": "notifications/tools/list_changed"}})
    try:
        with caplog.at_level(logging.WARNING, logger="apps.catalog.watch"):
            listener.start()
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
            eventually(lambda: "lost Redis" in caplog.text, timeout=10, what="the outage line")
            time.sleep(3.0)  # six reconnection attempts while Redis is down
            server = start_redis(port, tmp_path)
            eventually(lambda: "Redis back" in caplog.text, timeout=10, what="the recovery line")

            client = redis.Redis(port=port)
            eventually(
                lambda: client.publish(events_channel(DEFAULT_PREFIX), changed) and asked,
                timeout=10,
                what="list_changed after the outage",
            )
            client.close()
        lines = [r.getMessage() for r in caplog.records if r.name == "apps.catalog.watch"]
        assert len([m for m in lines if "lost Redis" in m]) == 1, lines
        assert len([m for m in lines if "Redis back" in m]) == 1, lines
        assert not any(r.exc_info for r in caplog.records), lines
        assert asked[0] == {"server_name": "echo"}
    finally:
        listener.stop()
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
