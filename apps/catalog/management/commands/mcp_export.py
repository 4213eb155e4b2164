"""Export the hub's MCP servers as a Claude-style or VS Code-style config file."""

from __future__ import annotations

import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.catalog.importing import export_servers


class Command(BaseCommand):
    help = (
        "Write every MCP server as a .mcp.json-style file that mcp_import reads back. Secrets (env "
        "and header values) become ${NAME} placeholders unless --include-secrets is given."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--output", "-o", type=Path, help="Write to this file (default: standard output)."
        )
        parser.add_argument("--format", choices=["claude", "vscode"], default="claude")
        parser.add_argument(
            "--include-secrets", action="store_true", help="Write env and header values in clear."
        )

    def handle(
        self, *args, output: Path | None, format: str, include_secrets: bool, **options
    ) -> None:
        export = export_servers(style=format, include_secrets=include_secrets)
        if output is None:
            self.stdout.write(export.text, ending="")
        else:
            self._write(output, export.text, private=include_secrets)
            self.stdout.write(f"wrote {export.count} server(s) to {output}")
        if export.variables:
            self.stderr.write(
                "secrets left out: set these environment variables before importing the file again: "
                + ", ".join(export.variables)
            )

    def _write(self, output: Path, text: str, *, private: bool) -> None:
        # A file holding secrets is created readable by its owner only.
        try:
            fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
            if private:
                os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise CommandError(f"Cannot write {output}: {exc}") from None
