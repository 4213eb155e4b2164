"""Discover servers now: connect, list everything (all pages), persist it to the catalog."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.catalog.discovery import _describe, discover_server
from apps.catalog.models import McpServer


class Command(BaseCommand):
    help = "Discover tools, resources and prompts of enabled servers (all, or those named)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("names", nargs="*", metavar="NAME")

    def handle(self, *args, names: list[str], **options) -> None:
        servers = McpServer.objects.filter(enabled=True)
        if names:
            missing = sorted(set(names) - set(McpServer.objects.filter(name__in=names).values_list("name", flat=True)))
            if missing:
                raise CommandError(f"No server named {', '.join(missing)}.")
            servers = McpServer.objects.filter(name__in=names)
        failures = 0
        for server in servers:
            failures += not self._discover(server)
        if failures:
            raise CommandError(f"{failures} server(s) failed discovery.")

    def _discover(self, server: McpServer) -> bool:
        started = time.perf_counter()
        self.stdout.write(f"{server.name}: discovering…", ending="")
        self.stdout.flush()
        try:
            report = discover_server(server=server)
        except Exception as exc:  # noqa: BLE001 - one broken server must not stop the others
            self.stdout.write(self.style.ERROR(f"\r{server.name}: failed: {_describe(exc)}"))
            return False
        self.stdout.write(self.style.SUCCESS(f"\r{report} in {time.perf_counter() - started:.1f} s"))
        return True
