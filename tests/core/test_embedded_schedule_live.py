"""`./hub run` (embedded default) runs the beat schedule in its one web process, from start-up.

Through a real web server, not an import of the tasks module: the web process imports no task module
by itself, and it is the schedule as served that must find its tasks.
"""

from __future__ import annotations

import sys

import pytest
from django.conf import settings

from apps.catalog.models import McpServer
from tests.catalog.conftest import tiny_args
from tests.live_hub import free_port, hub_env, start_web, stop
from tests.waiting import eventually

pytestmark = pytest.mark.skipif(
    bool(settings.REDIS_URL), reason="embedded shape: production runs `celery beat`"
)


def test_a_freshly_started_hub_checks_health_on_schedule_without_any_request(
    transactional_db, tmp_path
):
    server = McpServer.objects.create(name="tiny", command=sys.executable, args=tiny_args())
    env = hub_env(
        MCPHUB_EMBEDDED_BEAT="true", MCPHUB_HEALTH_INTERVAL="1", MCPHUB_DATA_DIR=str(tmp_path)
    )
    web = start_web(free_port(), env, tmp_path)
    try:
        eventually(
            lambda: McpServer.objects.filter(
                pk=server.pk, status="healthy", last_checked_at__isnull=False
            ).exists(),
            timeout=40,
            what=lambda: (
                "a health check by the embedded beat:\n" + (tmp_path / "web.log").read_text()
            ),
        )
    finally:
        stop([web])
    log = (tmp_path / "web.log").read_text()
    assert "NotRegistered" not in log
    assert "ERROR" not in log, log
    # A quiet log at INFO: no line per task run, no kombu warning about the in-memory broker.
    assert "celery.app.trace" not in log and "No hostname was supplied" not in log, log
