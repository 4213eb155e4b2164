"""The Usage page and API over a large call log.

    .venv/bin/python benchmarks/usage.py [--calls 300000] [--runs 5]

Builds a throwaway test database (SQLite in memory, or `test_<db>` on Postgres when DATABASE_URL
is set), writes `--calls` tool calls spread over 30 days (100 tools on 20 servers, 2% errors), and
times the Usage page and `GET /api/usage/` through the whole Django stack for each window.
Prints p50 / p95 in milliseconds and whether percentiles were sampled.
"""

from __future__ import annotations

import argparse
import random
from datetime import timedelta

import standalone  # noqa: F401  - the project importable, Django set up: first
from django.db import connection
from django.test import Client
from django.utils import timezone

from apps.accounts.models import User
from apps.toolsets.models import ToolCall
from benchmarks.django_db import test_database
from benchmarks.timing import timed


def fill_log(user: User, calls: int) -> None:
    rng, endpoint, now = random.Random(5), user.endpoints.get(), timezone.now()
    batch = []
    for i in range(calls):
        ok = rng.random() >= 0.02
        batch.append(
            ToolCall(
                user=user,
                endpoint=endpoint,
                server_name=f"server-{i % 20:02d}",
                tool_name=f"tool_{i % 100:03d}",
                exposed_name=f"tool_{i % 100:03d}",
                started_at=now - timedelta(seconds=rng.uniform(0, 30 * 86400)),
                duration_ms=rng.lognormvariate(4, 1),
                ok=ok,
                error="" if ok else "boom",
            )
        )
        if len(batch) == 10_000:
            ToolCall.objects.bulk_create(batch)
            batch = []
    ToolCall.objects.bulk_create(batch)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    with test_database():
        user = User.objects.create_user("bench", password="bench")
        fill_log(user, args.calls)
        client = Client()
        client.force_login(user)
        print(
            f"{ToolCall.objects.count()} calls over 30 days; {connection.vendor}; {args.runs} runs each"
        )
        for window in ("24h", "7d", "30d"):
            body = client.get(f"/api/usage/?window={window}").json()
            print(
                f"-- {window}: {body['totals']['calls']} calls, percentiles sampled: {body['sampled']}"
            )
            timed(
                f"Usage page ({window})",
                args.runs,
                lambda w=window: client.get(f"/usage/?window={w}"),
            )
            timed(
                f"API: usage ({window})",
                args.runs,
                lambda w=window: client.get(f"/api/usage/?window={w}"),
            )


if __name__ == "__main__":
    main()
