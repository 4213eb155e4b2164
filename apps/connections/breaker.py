"""Restart backoff and a circuit breaker, per backend.

Failures (start errors, crashes, hangs) count up; a successful request resets them.
Each restart waits `base * 2**(failures-1)` (capped). From `threshold` consecutive
failures on, the circuit opens: calls fail fast for `open_seconds` (doubling each time
a half-open trial fails, capped), then one trial start is let through.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from apps.connections.errors import ServerUnavailable


@dataclass(frozen=True)
class BreakerPolicy:
    threshold: int = 5
    backoff_base: float = 0.25
    backoff_max: float = 30.0
    open_seconds: float = 30.0
    open_max: float = 600.0


class Breaker:
    def __init__(self, server: str, policy: BreakerPolicy) -> None:
        self.server = server
        self.policy = policy
        self.failures = 0
        self.last_error = ""
        self._last_failure_at = 0.0
        self._open_until = 0.0

    @property
    def state(self) -> str:
        if self.failures < self.policy.threshold:
            return "closed"
        return "open" if time.monotonic() < self._open_until else "half-open"

    def check(self) -> None:
        """Raise while the circuit is open, so a dead backend costs callers nothing."""
        remaining = self._open_until - time.monotonic()
        if self.failures >= self.policy.threshold and remaining > 0:
            raise ServerUnavailable(
                self.server,
                f"server {self.server!r} is unavailable (circuit open, retry in {math.ceil(remaining)}s): "
                f"{self.last_error}",
            )

    def start_delay(self) -> float:
        if self.failures == 0 or self.failures >= self.policy.threshold:
            return 0.0  # the open period already spaced the half-open trial out
        backoff = min(self.policy.backoff_base * 2 ** (self.failures - 1), self.policy.backoff_max)
        return max(0.0, self._last_failure_at + backoff - time.monotonic())

    def record_failure(self, error: str) -> None:
        self.failures += 1
        self.last_error = error
        self._last_failure_at = time.monotonic()
        over = self.failures - self.policy.threshold
        if over >= 0:
            period = min(self.policy.open_seconds * 2**over, self.policy.open_max)
            self._open_until = self._last_failure_at + period

    def record_success(self) -> None:
        self.failures = 0
        self._open_until = 0.0

    def reset(self) -> None:
        self.record_success()
        self.last_error = ""
