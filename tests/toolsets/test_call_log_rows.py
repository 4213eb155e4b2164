"""The call log's batch write (COPY on Postgres, INSERT on SQLite) keeps every column as recorded,
and a row pointing at a user deleted meanwhile costs no other row."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from apps.toolsets import calllog
from apps.toolsets.models import ToolCall

pytestmark = [pytest.mark.django_db(transaction=True)]


def _row(user_id, endpoint_id, name: str, started: float, arguments) -> tuple:
    return (
        user_id,
        endpoint_id,
        None,
        "echo",
        name,
        f"x_{name}",
        started,
        12.5,
        False,
        "boom",
        arguments,
    )


def test_a_batch_is_written_with_every_column_as_recorded(alice):
    endpoint = alice.endpoints.get()
    started = time.time()
    arguments = {"text": 'héllo \t\\ "quoted"\nline', "n": [1, 2.5, None, True]}
    assert calllog._write([_row(alice.pk, endpoint.pk, "a", started, arguments)]) is None
    assert calllog._write([_row(None, None, "b", started, None)]) is None

    a, b = ToolCall.objects.order_by("tool_name")
    assert (a.user_id, a.endpoint_id, a.tool_id) == (alice.pk, endpoint.pk, None)
    assert (a.server_name, a.tool_name, a.exposed_name) == ("echo", "a", "x_a")
    assert abs(a.started_at - datetime.fromtimestamp(started, tz=UTC)).total_seconds() < 1e-3
    assert (a.duration_ms, a.ok, a.error, a.arguments) == (12.5, False, "boom", arguments)
    assert (b.user_id, b.arguments) == (None, None)


def test_a_row_of_a_deleted_user_is_kept_without_it_and_the_others_whole(alice, bob):
    gone = bob.pk
    bob.delete()
    batch = [
        _row(alice.pk, None, "before", time.time(), {"k": 1}),
        _row(gone, None, "orphan", time.time(), {"k": 2}),
        _row(alice.pk, None, "after", time.time(), None),
    ]
    assert calllog._write(batch) is None

    rows = {r.tool_name: r for r in ToolCall.objects.all()}
    assert sorted(rows) == ["after", "before", "orphan"]
    assert rows["before"].user_id == rows["after"].user_id == alice.pk
    assert rows["orphan"].user_id is None and rows["orphan"].arguments == {"k": 2}
