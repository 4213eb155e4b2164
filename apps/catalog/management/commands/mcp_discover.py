"""Discover servers now: connect, list everything (all pages), persist it to the catalog.

Prints one aligned table (server, status, what it offers, what changed) and each failure once
underneath; `./hub run` shows it at start-up. Exits 1 if any server failed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.catalog import operations
from apps.catalog.models import BUILTIN_NAMES, McpServer
from apps.catalog.operations import DiscoveryOutcome

COLUMNS = ("server", "status", "tools", "resources", "prompts", "since last discovery")


class Command(BaseCommand):
    help = "Discover tools, resources and prompts of enabled servers (all, or those named), all at once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("names", nargs="*", metavar="NAME")

    def handle(self, *args, names: list[str], verbosity: int, **options) -> None:
        servers = list(self._servers(names))
        if not servers:
            self.stdout.write(
                "No enabled servers yet: add them in the admin (/admin/) or import a .mcp.json (mcp_import)."
            )
            return
        started = time.perf_counter()
        with _quiet_pool_logs(unless=verbosity > 1):
            outcomes = operations.discover_many(servers=servers)
        self._table(outcomes)
        failed = [o for o in outcomes if not o.ok]
        for outcome in failed:
            self.stdout.write(self.style.ERROR(f"{outcome.server}: {outcome.error}"))
        self.stdout.write(_summary(outcomes, time.perf_counter() - started))
        if failed:
            raise SystemExit(1)

    def _servers(self, names: list[str]):
        if not names:
            return McpServer.objects.filter(enabled=True).exclude(name__in=BUILTIN_NAMES)
        missing = sorted(
            set(names)
            - set(McpServer.objects.filter(name__in=names).values_list("name", flat=True))
        )
        if missing:
            raise CommandError(f"No server named {', '.join(missing)}.")
        return McpServer.objects.filter(name__in=names)

    def _table(self, outcomes: list[DiscoveryOutcome]) -> None:
        rows = [COLUMNS, *(_row(outcome) for outcome in sorted(outcomes, key=lambda o: o.server))]
        widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
        for number, row in enumerate(rows):
            line = "  ".join(
                cell.rjust(w) if 2 <= i <= 4 else cell.ljust(w)
                for i, (cell, w) in enumerate(zip(row, widths))
            )
            self.stdout.write(_style(self.style, row[1], number)(line.rstrip()))


def _row(outcome: DiscoveryOutcome) -> tuple[str, ...]:
    if not outcome.ok:
        return (outcome.server, "down", "-", "-", "-", "failed (below)")
    report = outcome.report
    counts = report.counts
    resources = counts.get("resources", 0) + counts.get("templates", 0)
    return (
        outcome.server,
        "healthy",
        str(counts.get("tools", 0)),
        str(resources),
        str(counts.get("prompts", 0)),
        report.changes,
    )


def _style(style, status: str, number: int):
    if number == 0:
        return style.MIGRATE_HEADING
    return style.SUCCESS if status == "healthy" else style.ERROR


def _summary(outcomes: list[DiscoveryOutcome], seconds: float) -> str:
    down = sum(not o.ok for o in outcomes)
    healthy = len(outcomes) - down
    text = (
        f"{len(outcomes)} server(s) discovered in {seconds:.1f} s: {healthy} healthy, {down} down"
    )
    return text + ("; the hub serves the healthy ones, fix the others in the admin" if down else "")


@contextmanager
def _quiet_pool_logs(*, unless: bool) -> Iterator[None]:
    """The pool logs each failure as it happens; here the table says it once, so hold warnings back."""
    if unless:
        yield
        return
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)
