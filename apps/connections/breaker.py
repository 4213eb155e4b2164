"""Restart backoff and a circuit breaker, per backend.

Failures (start errors, crashes, hangs) count up; a successful request resets them.
The next start may run `retry_min` after a failure at first, then after `retry_ratio` of
the outage so far (capped at `retry_max`): a backend that was down 5 s is tried again
within ~1.3 s of each failure, one down for an hour every `retry_max`. So recovery costs
a fraction of the outage, and a long outage costs few trial starts.

Below `threshold` consecutive failures a caller waits for that retry (a crash is
restarted transparently); from `threshold` on the circuit is open: until the retry is
due, calls fail fast with the last error, then one trial start is let through (half-open).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from apps.connections.errors import ServerUnavailable


@dataclass(frozen=True)
class BreakerPolicy:
    threshold: int = 3
    retry_min: float = 0.1
    retry_ratio: float = 0.25
    retry_max: float = 30.0


class Breaker:
    def __init__(self, server: str, policy: BreakerPolicy) -> None:
        self.server = server
        self.policy = policy
        self.failures = 0
        self.last_error = ""
        self._first_failure_at = 0.0
        self._retry_at = 0.0

    @property
    def state(self) -> str:
        if self.failures < self.policy.threshold:
            return "closed"
        return "open" if time.monotonic() < self._retry_at else "half-open"

    def check(self) -> None:
        """Raise while the circuit is open, so a dead backend costs callers nothing."""
        remaining = self._retry_at - time.monotonic()
        if self.failures >= self.policy.threshold and remaining > 0:
            raise ServerUnavailable(
                self.server,
                f"server {self.server!r} is unavailable (circuit open, retry in {_seconds(remaining)}): "
                f"{self.last_error}",
            )

    def start_delay(self) -> float:
        if self.failures >= self.policy.threshold:
            return 0.0  # `check` already spaced the half-open trial out
        return max(0.0, self._retry_at - time.monotonic())

    def record_failure(self, error: str, *, began: float | None = None) -> None:
        """`began`: when the failed attempt started (a start); the wait counts from there."""
        now = time.monotonic()
        if self.failures == 0:
            self._first_failure_at = began if began is not None else now
        self.failures += 1
        self.last_error = error
        outage = now - self._first_failure_at
        wait = min(
            max(self.policy.retry_min, outage * self.policy.retry_ratio), self.policy.retry_max
        )
        self._retry_at = max(
            (began if began is not None else now) + wait, now + self.policy.retry_min
        )

    def record_success(self) -> None:
        self.failures = 0
        self._retry_at = 0.0

    def reset(self) -> None:
        self.record_success()
        self.last_error = ""


def _seconds(value: float) -> str:
    return f"{value:.1f}s" if value < 10 else f"{math.ceil(value)}s"
