"""The one retry every adapter gets: before the first event only, so nothing is ever said twice."""

from __future__ import annotations

import asyncio
import logging
from contextlib import aclosing
from collections.abc import AsyncIterator, Awaitable, Callable
from types import ModuleType
from typing import TypeVar

from apps.llm.adapters.errors import Failure, classify
from apps.llm.types import Event, LLMError

log = logging.getLogger(__name__)
T = TypeVar("T")


class Attempts:
    """Runs SDK calls for one adapter: classifies failures, retries a transient one once."""

    def __init__(self, *, sdk: ModuleType, base_url: str, timeout: float) -> None:
        self.sdk = sdk
        self.base_url = base_url
        self.timeout = timeout

    def _failure(self, exc: BaseException, model: str | None) -> Failure:
        failure = classify(exc, sdk=self.sdk, base_url=self.base_url, model=model, timeout=self.timeout)
        if failure is None:
            raise exc
        return failure

    async def call(self, fn: Callable[[], Awaitable[T]], *, model: str | None = None, retry: bool = True) -> T:
        for attempt in (1, 2):
            try:
                return await fn()
            except LLMError:
                raise
            except Exception as exc:  # noqa: BLE001 - classified; unknown ones are re-raised
                failure = self._failure(exc, model)
                if not retry:
                    raise failure.error() from exc
                await self._wait_or_raise(failure, attempt, exc)
        raise AssertionError("unreachable")

    async def stream(self, open_events: Callable[[], AsyncIterator[Event]], *, model: str) -> AsyncIterator[Event]:
        for attempt in (1, 2):
            started = False
            try:
                # aclosing: a consumer that stops early (or is cancelled) closes the HTTP response now.
                async with aclosing(open_events()) as events:
                    async for event in events:
                        started = True
                        yield event
                return
            except LLMError:
                raise
            except Exception as exc:  # noqa: BLE001 - classified; unknown ones are re-raised
                failure = self._failure(exc, model)
                if started:
                    raise _cut_off(failure.error()) from exc
                await self._wait_or_raise(failure, attempt, exc)

    async def _wait_or_raise(self, failure: Failure, attempt: int, exc: BaseException) -> None:
        if failure.retry_after is None or attempt == 2:
            raise failure.error(retried=attempt == 2) from exc
        log.info("LLM call to %s failed (%s); retrying once in %.2f s", self.base_url, failure.error(), failure.retry_after)
        await asyncio.sleep(failure.retry_after)


def _cut_off(error: LLMError) -> LLMError:
    # A retry now would repeat text the user already saw: report the broken reply instead.
    return LLMError(f"The reply was cut off: {error.message}", kind=error.kind, status=error.status)
