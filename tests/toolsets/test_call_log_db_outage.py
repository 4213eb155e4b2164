"""The hub's Postgres connections terminated (an operator's pg_terminate_backend, a failover) lose
no call-log row and log one line, not a traceback per row; while the database stays away the rows
are kept and written once it is back."""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, connections

from apps.toolsets import calllog
from apps.toolsets.exposure import Exposed
from apps.toolsets.models import ToolCall
from tests.conftest import TEST_PROCESS
from tests.gateway.conftest import _close_thread_connections  # noqa: F401 - fixture

pytestmark = [pytest.mark.django_db(transaction=True)]

needs_postgres = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="terminating connections is a Postgres fault"
)


def _exposed(name: str) -> Exposed:
    return Exposed(name=name, server="echo", backend_name=name, item_id=None, entry={})


def _record(names: list[str]) -> None:
    for name in names:
        calllog.record(
            None,
            None,
            _exposed(name),
            time.time(),
            time.perf_counter(),
            ok=True,
            error="",
            arguments={},
        )


def _rows(names: list[str]) -> list[tuple]:
    """Buffered rows as `record` makes them."""
    return [(None, None, None, "echo", n, n, time.time(), 1.0, True, "", None) for n in names]


def _terminate_others() -> int:
    """This process's other connections cut, as an operator's pg_terminate_backend would: how many."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = "
            "current_database() AND pid <> pg_backend_pid() AND application_name = %s",
            [TEST_PROCESS],  # this process's writer, not the session hub's connections
        )
        return sum(1 for (done,) in cursor.fetchall() if done)


@pytest.fixture
def own_buffer(monkeypatch):
    # This process's own buffer and flusher only: rows other tests left behind are not ours.
    monkeypatch.setattr(calllog, "_buffer", [])
    monkeypatch.setattr(calllog, "_flusher", None)
    monkeypatch.setattr(calllog, "_away", False)
    monkeypatch.setattr(calllog, "FLUSH_SECONDS", 3600)  # flushed by the test, not the timer


@needs_postgres
def test_terminated_connections_lose_no_row_and_log_one_line(own_buffer, caplog):
    writer = ThreadPoolExecutor(max_workers=1)  # one thread: its connection is the one terminated
    try:
        assert writer.submit(calllog._write, _rows(["first"])).result() is None
        assert _terminate_others() >= 1  # the writer's connection among them
        with caplog.at_level(logging.INFO, logger="apps.toolsets.calllog"):
            failure = writer.submit(calllog._write, _rows(["second", "third", "fourth"])).result()
    finally:
        writer.submit(lambda: connections["default"].close()).result()
        writer.shutdown()

    assert failure is None
    names = sorted(ToolCall.objects.values_list("tool_name", flat=True))
    assert names == ["first", "fourth", "second", "third"]
    assert not [r for r in caplog.records if r.exc_info]  # no traceback
    assert not [r for r in caplog.records if "dropped" in r.getMessage()]


@pytest.mark.anyio
async def test_rows_recorded_while_the_database_is_away_are_written_when_it_is_back(
    own_buffer, monkeypatch, caplog, _close_thread_connections
):
    real_insert = calllog._insert
    away = {"on": True}

    def insert(batch):
        if away["on"]:
            from django.db.utils import OperationalError

            raise OperationalError("server closed the connection unexpectedly")
        real_insert(batch)
        connections["default"].close()  # this writer thread's: the test database is dropped later

    monkeypatch.setattr(calllog, "_insert", insert)
    with caplog.at_level(logging.WARNING, logger="apps.toolsets.calllog"):
        _record(["a", "b"])
        await calllog.flush()
        _record(["c"])
        await calllog.flush()
        away["on"] = False
        await calllog.flush()

    from asgiref.sync import sync_to_async

    names = await sync_to_async(
        lambda: sorted(ToolCall.objects.values_list("tool_name", flat=True))
    )()
    assert names == ["a", "b", "c"] and calllog._buffer == []
    said = [r.getMessage() for r in caplog.records]
    assert len([s for s in said if "cannot reach the database" in s]) == 1  # one line per outage
    assert len([s for s in said if "the database is back" in s]) == 1
