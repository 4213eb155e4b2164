"""The tool-call log, in one place: this module writes it, `selectors` reads it (usage per tool and
server), `admin` and `api` show it; the model is `toolsets.models.ToolCall`.

Every tool call (toolsets.calls: gateway, chat turns, runs, dynamic mode's meta-tools) is recorded
off the hot path: rows are buffered and written in batches; every call is counted in the
Prometheus metrics here too (apps/core/metrics.py).

The hot path only appends a tuple; a thread writes the batch with one COPY (Postgres) or one plain
INSERT executemany (SQLite): the ORM's bulk_create cost ~100 µs of CPU per row here, most of it
per-field preparation.

A lost database connection (Postgres restarted, the connection terminated) loses no row: the batch
is written again on a new connection, or kept for the next flush while the database is away, with
one log line per outage instead of a traceback per row.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connections, router, transaction
from django.db.utils import InterfaceError, OperationalError

from apps.core import metrics
from apps.core.threads import in_thread
from apps.toolsets.models import ToolCall

if TYPE_CHECKING:
    from apps.toolsets.exposure import Exposed

logger = logging.getLogger(__name__)

FLUSH_SECONDS = 0.5
MAX_BUFFER = 5000
# The buffered row: ToolCall's columns in this order.
COLUMNS = (
    "user_id",
    "endpoint_id",
    "tool_id",
    "server_name",
    "tool_name",
    "exposed_name",
    "started_at",
    "duration_ms",
    "ok",
    "error",
    "arguments",
)
STARTED, ARGUMENTS = COLUMNS.index("started_at"), COLUMNS.index("arguments")

_buffer: list[tuple[Any, ...]] = []
_flusher: asyncio.Task[None] | None = None
_away = False  # the database could not be reached at the last write (logged once until it is back)


def record(
    user_id: int | None,
    endpoint_id: int | None,
    exposed: Exposed,
    started: float,
    clock: float,
    *,
    ok: bool,
    error: str,
    arguments: dict[str, Any],
) -> None:
    global _flusher
    duration = time.perf_counter() - clock
    # Counted even when the buffer is full: the metrics do not depend on the database keeping up.
    metrics.tool_call(exposed.server, exposed.backend_name, ok=ok, seconds=duration)
    if len(_buffer) >= MAX_BUFFER:
        logger.warning("call log buffer full: dropping a record (database too slow?)")
        return
    _buffer.append(
        (
            user_id,
            endpoint_id,
            exposed.item_id,
            exposed.server,
            exposed.backend_name,
            exposed.name,
            started,
            duration * 1000,
            ok,
            error,
            arguments if settings.MCPHUB_LOG_TOOL_ARGUMENTS else None,
        )
    )
    if _flusher is None or _flusher.done():
        _flusher = asyncio.create_task(_flush_soon(), name="mcphub-calllog")


def error_text(result: dict[str, Any]) -> str:
    """An `isError` tool result's text, as the log keeps it."""
    texts = [
        c.get("text", "")
        for c in result.get("content", [])
        if isinstance(c, dict) and c.get("type") == "text"
    ]
    return " ".join(texts)[:2000] or "isError"


async def _flush_soon() -> None:
    # Rows recorded while a batch is being written find this task still running (no new one is
    # started for them), so it goes on until the buffer is empty; the check and the task's end
    # have no await between them, so no row is left behind.
    while True:
        await asyncio.sleep(FLUSH_SECONDS)
        await flush()
        if not _buffer:
            return


async def flush() -> None:
    global _away
    batch = _buffer[:]
    del _buffer[: len(batch)]
    if not batch:
        return
    failure = await in_thread(_write)(batch)
    if failure is None:
        if _away:
            _away = False
            logger.warning("call log: the database is back; kept rows written")
        return
    room = MAX_BUFFER - len(_buffer)
    _buffer[:0] = batch[:room]  # oldest first, as they were recorded
    if not _away:
        _away = True
        logger.warning(
            "call log: cannot reach the database (%s); keeping the rows to write when it is back",
            failure,
        )


def _write(batch: list[tuple[Any, ...]]) -> str | None:
    """Writes the batch; returns why not when the database is unreachable (the rows are not written)."""
    for attempt in (1, 2):
        try:
            _insert(batch)
            return None
        except IntegrityError:
            break
        except (OperationalError, InterfaceError) as exc:
            # The connection was lost (terminated, Postgres restarted): a new one may work at once.
            connections[router.db_for_write(ToolCall)].close()
            if attempt == 2:
                return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        except DatabaseError:
            break
    # One row may point at a user, endpoint or tool deleted meanwhile: keep the others.
    for row in batch:
        _write_one(_model(row))
    return None


def _insert(batch: list[tuple[Any, ...]]) -> None:
    """All rows or none: one COPY on Postgres, else one INSERT executemany, in one transaction.

    On Postgres the rows go as psycopg takes them (an aware datetime, `Jsonb`), without Django's
    per-field preparation, in a COPY: executemany sends one statement per row and dumps each
    parameter in Python. The call log was ~10 % of the production web process's CPU under load
    (py-spy, `benchmarks/gateway.py`); `benchmarks/calllog.py` has the figures per row."""
    alias = router.db_for_write(ToolCall)
    connection = connections[alias]
    quote = connection.ops.quote_name
    table, columns = quote(ToolCall._meta.db_table), ", ".join(quote(c) for c in COLUMNS)
    with transaction.atomic(using=alias), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            from psycopg.types.json import Jsonb

            with (
                connection.wrap_database_errors,  # psycopg's errors as Django's, as cursor.execute
                cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,
            ):
                for row in batch:
                    values = list(row)
                    values[STARTED] = _when(row[STARTED])
                    if row[ARGUMENTS] is not None:
                        values[ARGUMENTS] = Jsonb(row[ARGUMENTS])
                    copy.write_row(values)
            return
        started_field = ToolCall._meta.get_field("started_at")
        arguments_field = ToolCall._meta.get_field("arguments")
        rows = []
        for row in batch:
            values = list(row)
            values[STARTED] = started_field.get_db_prep_save(_when(row[STARTED]), connection)
            if row[ARGUMENTS] is not None:
                values[ARGUMENTS] = arguments_field.get_db_prep_save(row[ARGUMENTS], connection)
            rows.append(values)
        placeholders = ", ".join(["%s"] * len(COLUMNS))
        cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({placeholders})", rows)


def _when(started: float) -> datetime:
    return datetime.fromtimestamp(started, tz=UTC)


def _model(row: tuple[Any, ...]) -> ToolCall:
    fields = dict(zip(COLUMNS, row))
    fields["started_at"] = _when(row[STARTED])
    return ToolCall(**fields)


def _write_one(row: ToolCall) -> None:
    try:
        with transaction.atomic():
            row.save(force_insert=True)
    except IntegrityError:
        row.pk = row.user_id = row.endpoint_id = row.tool_id = None
        try:
            row.save(force_insert=True)
        except DatabaseError as exc:
            logger.warning("dropped a call log row for %s: %s", row.exposed_name, exc)
    except DatabaseError as exc:
        logger.warning("dropped a call log row for %s: %s", row.exposed_name, exc)
