"""The one way async code here runs blocking work (the ORM, a file) off the event loop.

`in_thread(fn)(*args)` awaits `fn(*args)` on a thread of the loop's default executor, not on
Django's one thread-sensitive thread: the chat loop, the gateway and the pool's callers run many
such calls at once, and each thread keeps a pooled database connection of its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async

P = ParamSpec("P")
R = TypeVar("R")


def in_thread(fn: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    return sync_to_async(fn, thread_sensitive=False)
