"""Import MCP servers from a Claude Desktop / Claude Code / Cursor / VS Code config file."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import IntegrityError

from apps.accounts.models import Team, User
from apps.catalog.found_file import import_found_file
from apps.catalog.importing import import_servers
from apps.catalog.mcp_json import (
    McpJsonError,
    ServerConfig,
    candidate_paths,
    find_mcp_json,
    read_mcp_json,
)

T = TypeVar("T")


class Command(BaseCommand):
    help = (
        "Import MCP servers from a .mcp.json-style file (top-level mcpServers, or VS Code servers). "
        "Servers are matched by name: a second import of the same file changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "path",
            nargs="?",
            type=Path,
            help="The file; default: the first of $MCP_JSON_PATH, "
            "~/.lmstudio/mcp.json, ./.mcp.json, ~/.mcp.json, ../.mcp.json that exists.",
        )
        parser.add_argument(
            "--owner", metavar="USERNAME", help="Make the servers private to this user."
        )
        parser.add_argument("--team", metavar="SLUG", help="Share the servers with this team only.")
        parser.add_argument(
            "--dry-run", action="store_true", help="Show what would change; write nothing."
        )
        parser.add_argument(
            "--if-found",
            action="store_true",
            help="Without PATH: finding no file is not an error (for the launcher).",
        )
        parser.add_argument(
            "--sync",
            action="store_true",
            help="With --if-found: the file wins over changes made in the hub "
            "(re-creates deleted servers, overwrites changed ones, deletes servers it imported and no longer lists).",
        )
        parser.add_argument(
            "--no-discover",
            action="store_true",
            help="Do not discover the servers created or changed (the launcher does next).",
        )

    def handle(
        self, *args, path: Path | None, dry_run: bool, if_found: bool, no_discover: bool, **options
    ) -> None:
        if options["owner"] and options["team"]:
            raise CommandError("Give --owner or --team, not both.")
        self.verbosity = options["verbosity"]
        owner, team = self._owner(options["owner"]), self._team(options["team"])
        if options["sync"] and not (if_found and path is None):
            raise CommandError("--sync goes with --if-found (the file found at start-up).")
        if if_found and path is None:
            path = self._discover(if_found=True)
            if path is not None:
                self._import_found(
                    path, sync=options["sync"], dry_run=dry_run, discover=not no_discover
                )
            return
        path = path or self._discover(if_found=False)
        changes = self._apply(
            path,
            lambda configs: import_servers(
                configs=configs, owner=owner, team=team, dry_run=dry_run, discover=not no_discover
            ),
        )
        if self.verbosity > 0:
            for change in changes:
                self.stdout.write(f"{'would be ' if dry_run else ''}{change}")
        self.stdout.write(self._summary(changes, path=path, dry_run=dry_run))

    def _import_found(self, path: Path, *, sync: bool, dry_run: bool, discover: bool) -> None:
        """The launcher's import: once, then only what changed in the file and nobody changed in the hub."""
        outcome = self._apply(
            path,
            lambda configs: import_found_file(
                path=path, configs=configs, sync=sync, dry_run=dry_run, discover=discover
            ),
        )
        if outcome.unchanged_file:
            self.stdout.write(f"{path}: unchanged since it was imported; nothing to do")
            return
        prefix = "would be " if dry_run else ""
        lines = outcome.report()
        for line in lines:
            self.stdout.write(f"{prefix}{line}")
        suffix = " (dry run: nothing written)" if dry_run else ""
        self.stdout.write(f"{path}: {len(lines) or 'no'} change(s) to report{suffix}")

    def _apply(self, path: Path, importing: Callable[[Sequence[ServerConfig]], T]) -> T:
        """Read the file and run `importing` on its servers; any problem is one CommandError, nothing written."""
        try:
            parsed = read_mcp_json(path)
            result = importing(parsed.servers)
        except McpJsonError as exc:
            raise CommandError(
                f"{path}: nothing imported.\n" + "\n".join(f"  {e}" for e in exc.errors)
            ) from None
        except IntegrityError as exc:
            # Someone else wrote a server of the same name meanwhile; the transaction rolled back.
            raise CommandError(
                f"{path}: nothing imported: a concurrent change got in the way ({exc}); run again."
            )
        for warning in parsed.warnings:
            self.stderr.write(self.style.WARNING(f"warning: {warning}"))
        return result

    def _discover(self, *, if_found: bool) -> Path | None:
        environ = {"MCP_JSON_PATH": os.environ.get("MCP_JSON_PATH") or settings.MCP_JSON_PATH or ""}
        found = find_mcp_json(environ=environ)
        if found is not None:
            if self.verbosity > 0:  # the summary names it too
                self.stdout.write(f"using {found}")
            return found
        looked = "\n".join(f"  {p}" for p in candidate_paths(environ=environ))
        if if_found:
            self.stdout.write(f"no MCP config file found; nothing to import. Looked in:\n{looked}")
            return None
        raise CommandError(
            f"No MCP config file found. Give a PATH, or put one in one of:\n{looked}"
        )

    def _owner(self, username: str | None) -> User | None:
        if username is None:
            return None
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.")
        return user

    def _team(self, slug: str | None) -> Team | None:
        if slug is None:
            return None
        team = Team.objects.filter(slug=slug).first()
        if team is None:
            raise CommandError(f"No team {slug!r}.")
        return team

    def _summary(self, changes, *, path: Path, dry_run: bool) -> str:
        counts = Counter(change.action for change in changes)
        tally = ", ".join(f"{counts[a]} {a}" for a in ("created", "updated", "unchanged"))
        suffix = " (dry run: nothing written)" if dry_run else ""
        return f"{len(changes)} server(s) in {path}: {tally}{suffix}"
