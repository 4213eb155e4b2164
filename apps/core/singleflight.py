"""Cache misses that share one lookup: the burst of requests that all miss when a hot entry
expires (every concurrent request of a busy token, every session of a changed endpoint) runs
the database work once per key, in a thread, and every waiter gets its result."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from apps.core.threads import in_thread

T = TypeVar("T")
_inflight: dict[tuple[str, Hashable], asyncio.Future[Any]] = {}


async def single_flight(namespace: str, key: Hashable, lookup: Callable[[], T]) -> T:
    """`lookup()` run in a thread, once per (namespace, key) at a time on this event loop."""
    loop = asyncio.get_running_loop()
    slot = (namespace, key)
    pending = _inflight.get(slot)
    if pending is None or pending.get_loop() is not loop:
        pending = asyncio.ensure_future(in_thread(lookup)())
        _inflight[slot] = pending
        pending.add_done_callback(functools.partial(_landed, slot))
    return await asyncio.shield(pending)


def forget(namespace: str) -> None:
    """Later misses in `namespace` look again, rather than join a lookup that began before a change."""
    for slot in [slot for slot in _inflight if slot[0] == namespace]:
        del _inflight[slot]


def _landed(slot: tuple[str, Hashable], future: asyncio.Future[Any]) -> None:
    if _inflight.get(slot) is future:
        del _inflight[slot]
    if not future.cancelled():
        future.exception()  # retrieved here: every waiter may have gone
