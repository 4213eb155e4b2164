"""Waiting for something to happen, instead of sleeping for as long as it usually takes.

A fixed sleep is too short on a busy machine (a flaky test) and too long everywhere else (a slow
one); `eventually` polls for the thing itself and, when it never comes, says what was awaited and
the last value seen. `timeout` is a "did not hang" bound, not a speed claim: leave it generous.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
What = str | Callable[[], str]


def eventually(
    check: Callable[[], T], *, timeout: float = 10.0, interval: float = 0.05, what: What = ""
) -> T:
    """`check()`'s first truthy value, polled every `interval` seconds; AssertionError (what was
    awaited, the last value) when none comes within `timeout`. `what` describes the awaited thing,
    or is a function that does when it never came (a log's tail, a server's last error)."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(_failure(check, what, timeout, value))
        time.sleep(interval)
    return value


async def eventually_async(
    check: Callable[[], T | Awaitable[T]],
    *,
    timeout: float = 10.0,
    interval: float = 0.05,
    what: What = "",
) -> T:
    """`eventually` for the event loop: `check` may be sync (fast, no I/O: it runs on the loop) or
    async (`sync_to_async(query)` for the ORM)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(_failure(check, what, timeout, value))
        await asyncio.sleep(interval)


def _failure(check: Callable, what: What, timeout: float, value: object) -> str:
    awaited = (what() if callable(what) else what) or _source(check)
    return f"waited {timeout:g} s for {awaited}; the last value was {value!r}"


def _source(check: Callable) -> str:
    """The check's own text (a lambda's line), else its name: what the test was waiting for."""
    try:
        return " ".join(inspect.getsource(check).split())
    except (OSError, TypeError):
        return getattr(check, "__qualname__", repr(check))
