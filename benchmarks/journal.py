"""The chat journal's batch write under many turns at once: CPU and wall time of one `store()` of
`--turns` writes (one event and one lease fence each, as a burst of streaming turns queues them),
with the fences checked in one UPDATE per batch (the hub's) vs one UPDATE per write (before).

    DATABASE_URL=postgres://... .venv/bin/python benchmarks/journal.py [--turns 100] [--batches 20]

Builds a throwaway test database (`test_<db>` on Postgres when DATABASE_URL is set, SQLite
otherwise) with `--turns` running turns, then stores `--batches` batches each way, interleaved,
through `apps.chat.journal.store` on this thread. Prints the medians per batch and per write.
"""

from __future__ import annotations

import argparse
import statistics
import time
from unittest import mock

import standalone  # noqa: F401  - the project importable, Django set up: first
from django.db import connection

from apps.accounts.models import User
from apps.chat import journal, records
from apps.chat.models import Conversation, Turn
from apps.llm.models import Provider
from benchmarks.django_db import test_database

WORKER = "bench:1"


def batch(turns: list[Turn], seq: int) -> list[journal.Write]:
    event = [{"seq": seq, "type": "text", "payload": {"text": "a streamed chunk"}}]
    return [
        journal.Write(
            rows=records.event_rows(turn.conversation_id, event),
            fences=[records.StillHeld(turn.pk, WORKER)],
            done=None,  # type: ignore[arg-type]  # no loop here: nobody awaits the write
        )
        for turn in turns
    ]


def one_update_per_fence(cls: type[records.StillHeld], fences: list[records.StillHeld]) -> None:
    for fence in fences:
        batched(cls, [fence])


batched = records.StillHeld.check.__func__  # type: ignore[attr-defined]


def timed(writes: list[journal.Write]) -> tuple[float, float]:
    cpu, wall = time.thread_time(), time.perf_counter()
    journal.store(writes)
    return time.thread_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--batches", type=int, default=20)
    args = parser.parse_args()

    with test_database():
        user = User.objects.create_user("bench", password="bench")
        provider = Provider.objects.create(
            name="p", kind="openai", base_url="http://127.0.0.1:1/v1", owner=user
        )
        turns = [
            Turn.objects.create(
                conversation=Conversation.objects.create(owner=user, provider=provider),
                worker=WORKER,
            )
            for _ in range(args.turns)
        ]
        ways = {"one UPDATE per batch (the hub's)": batched, "one UPDATE per write": None}
        figures: dict[str, list[tuple[float, float]]] = {way: [] for way in ways}
        seq = 0
        for _ in range(args.batches):
            for way, check in ways.items():
                seq += 1
                with mock.patch.object(
                    records.StillHeld, "check", classmethod(check or one_update_per_fence)
                ):
                    figures[way].append(timed(batch(turns, seq)))
        print(
            f"{connection.vendor}: {args.batches} batches of {args.turns} writes each way, "
            "interleaved (one event row and one fence per write)"
        )
        print(f"{'fences':34} {'CPU ms/batch':>13} {'wall ms/batch':>14} {'CPU µs/write':>13}")
        for way, pairs in figures.items():
            cpu = statistics.median(c for c, _ in pairs)
            wall = statistics.median(w for _, w in pairs)
            print(f"{way:34} {cpu * 1e3:13.1f} {wall * 1e3:14.1f} {cpu / args.turns * 1e6:13.0f}")


if __name__ == "__main__":
    main()
