"""Beat and the admin hand work to Celery: the tasks keep their names and do the real thing."""

from __future__ import annotations

from django.conf import settings

from apps.catalog import tasks, watch
from apps.catalog.models import McpServer
from mcphub.celery import app as celery_app
from tests.catalog.conftest import echo_args, tiny_args
from tests.waiting import eventually


def test_task_names_are_stable_and_beat_refers_to_them():
    names = {
        t.name
        for t in (
            tasks.discover_server,
            tasks.discover_servers,
            tasks.discover_all,
            tasks.check_health,
            tasks.check_health_all,
            tasks.close_server,
            watch.watch_mcp_json,
        )
    }

    assert names == {
        "catalog.discover_server",
        "catalog.discover_servers",
        "catalog.discover_all",
        "catalog.check_health",
        "catalog.check_health_all",
        "catalog.close_server",
        "catalog.watch_mcp_json",
    }
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {name for name in scheduled if name.startswith("catalog.")} <= names
    celery_app.loader.import_default_modules()  # what a worker, beat and the embedded schedule load
    assert scheduled <= set(
        celery_app.tasks
    )  # every app's scheduled task is registered under its name
    assert settings.CELERY_TASK_ROUTES["catalog.*"] == {"queue": "mcp"}


def test_a_vanished_or_disabled_server_is_skipped_quietly(make_server):
    disabled = make_server("off", tiny_args(), enabled=False)

    tasks.discover_server.apply(args=(987654,)).get()
    tasks.check_health.apply(args=(987654,)).get()
    tasks.discover_server.apply(args=(disabled.pk,)).get()
    tasks.discover_servers.apply(args=([987654, disabled.pk],)).get()

    disabled.refresh_from_db()
    assert disabled.status == McpServer.Status.UNKNOWN and not disabled.tools.exists()


def test_discover_all_discovers_every_enabled_server(pool_host, make_server):
    echo = make_server("echo", echo_args())
    tiny = make_server("tiny", tiny_args())
    off = make_server("off", tiny_args(), enabled=False)

    tasks.discover_all.delay()

    eventually(
        lambda: (
            echo.tools.filter(name="touch_tools").exists()
            and tiny.tools.filter(name="argv").exists()
        ),
        timeout=20,
    )
    assert not off.tools.exists()


def test_health_checks_mark_each_server_honestly(pool_host, make_server):
    good = make_server("good", tiny_args())
    broken = make_server("broken", tiny_args("--fail", "missing API key"))
    off = make_server("off", tiny_args(), enabled=False)

    tasks.check_health_all.delay()

    def statuses():
        rows = dict(McpServer.objects.values_list("name", "status"))
        return rows if rows["good"] != "unknown" and rows["broken"] != "unknown" else None

    assert eventually(statuses, timeout=20) == {
        "good": "healthy",
        "broken": "down",
        "off": "unknown",
    }
    broken.refresh_from_db()
    assert "missing API key" in broken.last_error and broken.last_checked_at is not None
    good.refresh_from_db()
    assert good.last_ok_at is not None
    off.refresh_from_db()
    assert off.last_checked_at is None
