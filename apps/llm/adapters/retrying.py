"""Retries before the first event only, so nothing is ever said twice: one retry of a transient
failure, a local server's cold start (model loading, queue full) waited out with backoff, and, when
the caller gives `patience` (runs: minutes, chat turns: seconds), a provider outage (connection
refused, 5xx, 429) waited out too, with backoff and jitter, honouring Retry-After."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from types import ModuleType
from typing import TypeVar

from apps.llm.adapters.errors import Failure, classify
from apps.llm.types import Event, LLMError, ProviderStatus, TextDelta

log = logging.getLogger(__name__)
T = TypeVar("T")

# Longest a loading model is waited for, in all (MCPHUB_LLM_LOADING_WAIT); the waits between
# asking again double from the first to the longest, unless the server says (Retry-After).
LOADING_WAIT = 60.0
FIRST_BACKOFF = 0.5
LONGEST_BACKOFF = 8.0
# An outage: the waits grow from the first to the longest, each drawn in [half, whole] (jitter, so
# a hundred runs waiting on one provider do not knock at the same instant when it comes back).
OUTAGE_FIRST_BACKOFF = 0.5
OUTAGE_LONGEST_BACKOFF = 3.0


def loading_wait() -> float:
    # Read per call, not at import: the adapters load lazily, and tests change the setting.
    from django.conf import settings

    return float(getattr(settings, "MCPHUB_LLM_LOADING_WAIT", LOADING_WAIT))


class _Tries:
    """What one call has spent: its one retry, the time waited on a loading or busy server, and the
    time waited out an outage (`patience`: 0 gives the one retry only)."""

    def __init__(self, budget: float, patience: float = 0.0) -> None:
        self.budget = budget
        self.patience = patience
        self.retried = False
        self.waited = 0.0
        self.backoff = FIRST_BACKOFF
        self.outage = 0.0  # seconds waited out an outage so far
        self.outage_backoff = OUTAGE_FIRST_BACKOFF

    def next_wait(self, failure: Failure) -> float | None:
        """Seconds to wait before asking again, or None: raise."""
        if failure.waiting and self.budget > 0:
            left = self.budget - self.waited
            if left <= 0:
                return None
            wait = min(failure.asked_wait if failure.asked_wait is not None else self.backoff, left)
            self.backoff = min(self.backoff * 2, LONGEST_BACKOFF)
            self.waited += wait
            return wait
        if self.patience > 0 and failure.transient:
            return self._outage_wait(failure)
        if failure.retry_after is None or self.retried:
            return None
        self.retried = True
        return failure.retry_after

    def _outage_wait(self, failure: Failure) -> float | None:
        left = self.patience - self.outage
        if left <= 0:
            return None
        drawn = self.outage_backoff * random.uniform(0.5, 1.0)
        self.outage_backoff = min(self.outage_backoff * 2, OUTAGE_LONGEST_BACKOFF)
        wait = min(failure.asked_wait if failure.asked_wait is not None else drawn, left)
        self.outage += wait
        return wait

    def error(self, failure: Failure) -> LLMError:
        if self.outage and not failure.waiting:
            return failure.error(waited=self.outage)
        return failure.error(retried=self.retried, waited=self.waited if failure.waiting else 0.0)

    def status(self, failure: Failure) -> ProviderStatus:
        if not failure.waiting:
            said = failure.error().message
            return ProviderStatus(
                f"Waiting for the model provider ({self.outage:.0f} s of at most "
                f"{self.patience:.0f} s): {said}"
            )
        what = "The model is loading" if failure.waiting == "loading" else "The provider is busy"
        return ProviderStatus(
            f"{what}; waiting for it ({self.waited:.0f} s of at most {self.budget:.0f} s)…"
        )


class Attempts:
    """Runs SDK calls for one adapter: classifies failures, retries a transient one once; a stream
    waits out a loading or busy server for up to `loading_wait()` seconds."""

    def __init__(self, *, sdk: ModuleType, base_url: str, timeout: float) -> None:
        self.sdk = sdk
        self.base_url = base_url
        self.timeout = timeout

    def _failure(self, exc: BaseException, model: str | None) -> Failure:
        failure = classify(
            exc, sdk=self.sdk, base_url=self.base_url, model=model, timeout=self.timeout
        )
        if failure is None:
            raise exc
        return failure

    async def call(
        self, fn: Callable[[], Awaitable[T]], *, model: str | None = None, retry: bool = True
    ) -> T:
        # Model lists answer pages and probes: a loading server gets the one retry, not the long wait.
        tries = _Tries(0.0)
        while True:
            try:
                return await fn()
            except LLMError:
                raise
            except Exception as exc:  # noqa: BLE001 - classified; unknown ones are re-raised
                failure = self._failure(exc, model)
                wait = tries.next_wait(failure) if retry else None
                if wait is None:
                    raise tries.error(failure) from exc
                await self._pause(failure, wait)

    async def stream(
        self,
        open_events: Callable[[], AsyncIterator[Event]],
        *,
        model: str,
        patience: float = 0.0,
    ) -> AsyncIterator[Event]:
        tries = _Tries(loading_wait(), patience)
        while True:
            started = False
            received = 0  # characters of reply text the consumer has had
            try:
                # aclosing: a consumer that stops early (or is cancelled) closes the HTTP response now.
                async with aclosing(open_events()) as events:
                    async for event in events:
                        started = True
                        if isinstance(event, TextDelta):
                            received += len(event.text)
                        yield event
                return
            except LLMError:
                raise
            except Exception as exc:  # noqa: BLE001 - classified; unknown ones are re-raised
                failure = self._failure(exc, model)
                if started:
                    raise _cut_off(failure, received) from exc
                wait = tries.next_wait(failure)
                if wait is None:
                    raise tries.error(failure) from exc
                if failure.waiting or tries.outage:
                    yield tries.status(failure)
                await self._pause(failure, wait)

    async def _pause(self, failure: Failure, wait: float) -> None:
        log.info(
            "LLM call to %s failed (%s); asking again in %.2f s",
            self.base_url,
            failure.error(),
            wait,
        )
        await asyncio.sleep(wait)


def _cut_off(failure: Failure, received: int) -> LLMError:
    # A retry now would repeat text the user already saw: report the broken reply instead.
    reason = (failure.broke or failure.error().message).rstrip(".")
    after = f" after {received} characters" if received else ""
    return LLMError(
        f"The reply was cut off{after}: {reason}.",
        kind=failure.kind,
        status=failure.status,
        received_chars=received,
    )
