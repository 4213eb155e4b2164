"""An encoder process (apps.discovery.embeddings.serve) whose encoding of a text holding SLOWLY
first burns CPU for SECONDS while holding the interpreter lock, as no real model would: run in a
web process's thread, it would stop that process's event loop for as long."""

from __future__ import annotations

import time

from apps.discovery import embeddings

SLOWLY = "slowly"
SECONDS = 3.0


def hold_the_lock(seconds: float) -> None:
    """One C call (sum over a range) that never lets another thread of this process run."""
    started = time.perf_counter()
    sum(range(1_000_000))
    per_million = time.perf_counter() - started
    sum(range(int(seconds / per_million * 1_000_000)))


def main() -> None:
    forward = embeddings.MiniLM._forward

    def slow_forward(self, texts):
        if any(SLOWLY in t for t in texts):
            hold_the_lock(SECONDS)
        return forward(self, texts)

    embeddings.MiniLM._forward = slow_forward
    embeddings.serve()


if __name__ == "__main__":
    main()
