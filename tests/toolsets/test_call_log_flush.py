"""A call recorded while the previous batch is still being written is written too, without waiting
for another call to come along (CI lost the `crash` row of test_every_call_is_logged this way)."""

import threading
import time

import pytest

from apps.toolsets import calllog
from apps.toolsets.exposure import Exposed
from tests.waiting import eventually_async

ECHO = Exposed(name="echo", server="echo", backend_name="echo", item_id=1, entry={})


@pytest.mark.anyio
async def test_a_row_recorded_during_a_slow_write_is_written_soon_after(monkeypatch):
    written: list[str] = []
    writing = threading.Event()

    def slow_write(batch):
        writing.set()
        time.sleep(0.4)  # the database is slow: the second call lands while this batch is written
        written.extend(row[calllog.COLUMNS.index("tool_name")] for row in batch)

    # This process's own buffer and flusher only: rows other tests left behind are not ours.
    monkeypatch.setattr(calllog, "_buffer", [])
    monkeypatch.setattr(calllog, "_flusher", None)
    monkeypatch.setattr(calllog, "_write", slow_write)
    monkeypatch.setattr(calllog, "FLUSH_SECONDS", 0.05)
    now = time.time()
    calllog.record(None, None, ECHO, now, time.perf_counter(), ok=True, error="", arguments={})
    await eventually_async(writing.is_set)  # the first batch is being written now
    second = Exposed(name="crash", server="echo", backend_name="crash", item_id=1, entry={})
    calllog.record(
        None, None, second, now, time.perf_counter(), ok=False, error="boom", arguments={}
    )

    await eventually_async(lambda: "crash" in written, timeout=5)
    assert written == ["echo", "crash"]
