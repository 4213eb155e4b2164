"""Timing for the page and API benchmarks: p50/p95 of repeated requests through Django's test client."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def timed(label: str, runs: int, call: Callable[[], Any], *, ok: tuple[int, ...] = (200,)) -> None:
    """Run `call` `runs` times; print p50, p95 and the last response's size."""
    samples, size = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        response = call()
        samples.append((time.perf_counter() - start) * 1000)
        assert response.status_code in ok, (label, response.status_code)
        size = len(response.content)
    samples.sort()
    p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
    print(
        f"{label:<44} p50 {statistics.median(samples):7.1f} ms   p95 {p95:7.1f} ms   {size / 1024:7.1f} KiB"
    )
