"""The call log's batch write: CPU per row of the COPY the hub uses on Postgres vs one INSERT
executemany (what it used before, and still uses on SQLite).

    DATABASE_URL=postgres://... .venv/bin/python benchmarks/calllog.py [--batch 200] [--batches 50]

Builds a throwaway test database (`test_<db>` on Postgres when DATABASE_URL is set, SQLite in
memory otherwise), then writes `--batches` batches of `--batch` rows each way, interleaved, through
`apps.toolsets.calllog._insert` (rows as the gateway records them: a user, an endpoint, a tool, a
small arguments object). Prints the writing thread's CPU and the wall time per row, median of the
batches.
"""

from __future__ import annotations

import argparse
import statistics
import time
from unittest import mock

import standalone  # noqa: F401  - the project importable, Django set up: first
from django.db import connection

from apps.accounts.models import User
from apps.catalog.models import McpServer, Tool
from apps.toolsets import calllog
from apps.toolsets.models import ToolCall
from benchmarks.django_db import test_database


def rows(user_id: int, endpoint_id: int, tool_id: int, count: int) -> list[tuple]:
    now = time.time()
    return [
        (user_id, endpoint_id, tool_id, "echo", "echo", "echo", now + i / 1000, 1.25, True, "",
         {"text": f"hello {i}"})
        for i in range(count)
    ]  # fmt: skip


def timed_batch(batch: list[tuple], vendor: str) -> tuple[float, float]:
    with mock.patch.object(connection, "vendor", vendor):
        cpu, wall = time.thread_time(), time.perf_counter()
        calllog._insert(batch)
        return time.thread_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--batches", type=int, default=50)
    args = parser.parse_args()

    with test_database():
        user = User.objects.create_user("bench", password="bench")
        endpoint = user.endpoints.get()
        server = McpServer.objects.create(name="echo", transport="stdio", command="true")
        tool = Tool.objects.create(server=server, name="echo", input_schema={"type": "object"})
        ways = {"INSERT executemany": "other"}
        if connection.vendor == "postgresql":
            ways = {"COPY (the hub's)": "postgresql", **ways}
        figures: dict[str, list[tuple[float, float]]] = {way: [] for way in ways}
        for _ in range(args.batches):
            for way, vendor in ways.items():
                batch = rows(user.pk, endpoint.pk, tool.pk, args.batch)
                figures[way].append(timed_batch(batch, vendor))
        print(
            f"{connection.vendor}: {args.batches} batches of {args.batch} rows each way, interleaved;"
            f" {ToolCall.objects.count()} rows written"
        )
        print(f"{'way':24} {'CPU µs/row':>11} {'wall µs/row':>12}")
        for way, pairs in figures.items():
            cpu = statistics.median(c for c, _ in pairs) / args.batch * 1e6
            wall = statistics.median(w for _, w in pairs) / args.batch * 1e6
            print(f"{way:24} {cpu:11.1f} {wall:12.1f}")


if __name__ == "__main__":
    main()
