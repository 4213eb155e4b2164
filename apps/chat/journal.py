"""What the chat loop writes as turns and runs go, a transaction at a time for all of them.

Events, the model's and the tools' messages, run steps and their totals: everything the turns and
runs on one loop want written goes into one queue, and one writer stores all that is queued in one
transaction (one INSERT per table, on one database thread), then wakes each writer's caller.
Measured on the chat benchmark (100 conversations × 5 rounds, one worker process): with a thread
and a transaction per write (three a round, each four round trips) the worker spent ~27 ms of CPU
per round, most of it handing rows to database threads and back; writes that share a transaction
cost a fraction of that, and the round waits for one write instead of three.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.db import connection, models, transaction

from apps.core.compiled import insert
from apps.core.threads import in_thread

logger = logging.getLogger(__name__)


def commit_without_waiting_for_disk() -> None:
    """Events, messages and run steps are written many times a second per turn; waiting for each
    commit's WAL flush made the database the bottleneck of a hundred concurrent turns. The commit is
    still visible to every reader at once (so `resume` stays lossless) and survives any crash of a
    hub process; only a crash of Postgres itself could drop the last fraction of a second (a resumed
    run then redoes that round). The user's own message is committed the ordinary way."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")


class Fence(Protocol):
    """What a write's author must still hold (its lease): `type(fence).check(fences)` checks all
    the batch's fences of that type at once, raising when one is no longer held."""

    @classmethod
    def check(cls, fences: Sequence[Any]) -> None: ...


@dataclass
class Write:
    """Rows to insert, then updates to run (sync callables), in the batch's transaction; `fences`
    are checked first and raise when the writer may no longer write (its lease was taken over): the
    batch rolls back before any of its rows could collide with its new owner's, and each of its
    writes is tried again alone, so only the one that lost its lease fails."""

    rows: Sequence[models.Model] = ()
    updates: Sequence[Callable[[], object]] = ()
    fences: Sequence[Fence] = ()
    done: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


def store(writes: Sequence[Write]) -> None:
    """Sync: one transaction, one INSERT per model (rows keep their order within a model)."""
    by_model: dict[type[models.Model], list[models.Model]] = {}
    for write in writes:
        for row in write.rows:
            by_model.setdefault(type(row), []).append(row)
    fences: dict[type, list[Fence]] = {}
    for write in writes:
        for fence in write.fences:
            fences.setdefault(type(fence), []).append(fence)
    with transaction.atomic():
        commit_without_waiting_for_disk()
        for kind, same in fences.items():
            kind.check(same)
        for model, rows in by_model.items():
            insert(model, rows)  # their keys are never read back
        for write in writes:
            for update in write.updates:
                update()


class Journal:
    """The writer of one event loop; `write()` returns once the rows are committed."""

    def __init__(self) -> None:
        self._pending: list[Write] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def write(
        self,
        rows: Sequence[models.Model] = (),
        updates: Sequence[Callable[[], object]] = (),
        fences: Sequence[Fence] = (),
    ) -> None:
        write = Write(rows, updates, fences)
        self._pending.append(write)
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._write_forever(), name="chat-journal")
        await write.done

    async def _write_forever(self) -> None:
        save = in_thread(store)
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._pending = self._pending, []
            if not batch:
                continue
            try:
                await save(batch)
                outcomes: list[BaseException | None] = [None] * len(batch)
            except Exception as exc:  # noqa: BLE001 - each caller gets its own outcome
                # One write failed (its conversation deleted meanwhile?): the others are stored on their own.
                outcomes = (
                    [exc] if len(batch) == 1 else [await _alone(save, write) for write in batch]
                )
            for write, outcome in zip(batch, outcomes):
                if write.done.done():
                    continue
                if outcome is None:
                    write.done.set_result(None)
                else:
                    write.done.set_exception(outcome)


async def _alone(save: Callable, write: Write) -> BaseException | None:
    try:
        await save([write])
        return None
    except Exception as exc:  # noqa: BLE001
        return exc


_journals: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Journal] = (
    weakref.WeakKeyDictionary()
)


def journal() -> Journal:
    """The running loop's journal (created on first use)."""
    loop = asyncio.get_running_loop()
    found = _journals.get(loop)
    if found is None:
        found = _journals[loop] = Journal()
    return found
