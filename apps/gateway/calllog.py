"""Records every tools/call, off the hot path: rows are buffered and written in batches."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction

from apps.gateway.models import ToolCall

if TYPE_CHECKING:
    from apps.gateway.protocol import Context
    from apps.gateway.view import Exposed

logger = logging.getLogger(__name__)

FLUSH_SECONDS = 0.5
MAX_BUFFER = 5000

_buffer: list[ToolCall] = []
_flusher: asyncio.Task[None] | None = None


def record(
    ctx: Context, exposed: Exposed, started: float, clock: float, *, ok: bool, error: str, arguments: dict[str, Any]
) -> None:
    global _flusher
    if len(_buffer) >= MAX_BUFFER:
        logger.warning("call log buffer full: dropping a record (database too slow?)")
        return
    _buffer.append(
        ToolCall(
            user_id=ctx.principal.user_id,
            endpoint_id=ctx.endpoint.id,
            tool_id=exposed.item_id,
            server_name=exposed.server,
            tool_name=exposed.backend_name,
            exposed_name=exposed.name,
            started_at=datetime.fromtimestamp(started, tz=timezone.utc),
            duration_ms=(time.perf_counter() - clock) * 1000,
            ok=ok,
            error=error,
            arguments=arguments if settings.MCPHUB_LOG_TOOL_ARGUMENTS else None,
        )
    )
    if _flusher is None or _flusher.done():
        _flusher = asyncio.create_task(_flush_soon(), name="mcphub-calllog")


async def _flush_soon() -> None:
    await asyncio.sleep(FLUSH_SECONDS)
    await flush()


async def flush() -> None:
    batch = _buffer[:]
    del _buffer[: len(batch)]
    if batch:
        await sync_to_async(_write, thread_sensitive=False)(batch)


def _write(batch: list[ToolCall]) -> None:
    try:
        ToolCall.objects.bulk_create(batch)
    except DatabaseError:
        # One row may point at a user, endpoint or tool deleted meanwhile: keep the others.
        for row in batch:
            _write_one(row)


def _write_one(row: ToolCall) -> None:
    try:
        with transaction.atomic():
            row.save(force_insert=True)
    except IntegrityError:
        row.pk = row.user_id = row.endpoint_id = row.tool_id = None
        try:
            row.save(force_insert=True)
        except DatabaseError:
            logger.exception("dropped a call log row for %s", row.exposed_name)
    except DatabaseError:
        logger.exception("dropped a call log row for %s", row.exposed_name)
