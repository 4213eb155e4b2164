"""The health log says what changed: a server that stays down is logged once, not every minute."""

from __future__ import annotations

import logging

from apps.catalog import tasks
from tests.catalog.conftest import tiny_args


def test_a_server_that_stays_down_is_logged_once_and_its_recovery_once(
    pool_host, make_server, caplog
):
    server = make_server("flaky", tiny_args("--fail", "missing API key"))
    caplog.set_level(logging.INFO, logger="apps.catalog.tasks")

    for _ in range(3):
        tasks.check_health.apply(args=(server.pk,))
    server.refresh_from_db()
    server.args = tiny_args()  # fixed
    server.save()
    for _ in range(2):
        tasks.check_health.apply(args=(server.pk,))

    lines = [
        record.getMessage() for record in caplog.records if record.name == "apps.catalog.tasks"
    ]
    assert len(lines) == 2, lines
    assert (
        "flaky: down" in lines[0]
        and "missing API key" in lines[0]
        and lines[0].endswith("(was unknown)")
    )
    assert lines[1].startswith("health: flaky: healthy") and lines[1].endswith("(was down)")
