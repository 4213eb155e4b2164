"""The `.mcp.json` that `./hub run` finds at start-up: imported once, then only what changed in it.

Re-importing the found file on every start silently reverted what people changed in the admin or
the pages and brought back servers they had deleted. Now each found file has an `ImportedFile`
record: a fingerprint of its entries and, per server, a fingerprint of the server as the import
left it. A start whose file is unchanged does nothing. When the file changed, each entry is
applied only where the hub still holds what the last import wrote; a server a person changed or
deleted since is reported and kept as it is, and a server that was in the hub before any import
from this file is left alone. `sync=True` (`--sync`) asks for the file to win: every entry is
applied, deleted servers come back, and servers this file imported that it no longer lists are
deleted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from apps.catalog.importing import ServerChange, import_servers, wanted_fields
from apps.catalog.mcp_json import ServerConfig
from apps.catalog.models import ImportedFile, McpServer

# What an import writes and a person may change afterwards.
FINGERPRINT_FIELDS = (
    "transport",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "enabled",
    "display_name",
    "timeout",
)


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def server_fingerprint(server: McpServer) -> str:
    return _digest({name: getattr(server, name) for name in FINGERPRINT_FIELDS})


def file_fingerprint(configs: Sequence[ServerConfig]) -> str:
    """The entries as the hub reads them (after `${VAR}` expansion): a changed variable counts too."""
    return _digest({config.name: wanted_fields(config) for config in configs})


@dataclass
class FoundFileImport:
    """What importing a found file did (or, in a dry run, would do)."""

    unchanged_file: bool = False
    changes: list[ServerChange] = field(default_factory=list)
    kept_changed: list[str] = field(default_factory=list)  # changed in the hub since the import
    kept_deleted: list[str] = field(default_factory=list)  # deleted in the hub since the import
    kept_foreign: list[str] = field(
        default_factory=list
    )  # in the hub before any import of this file
    removed: list[str] = field(
        default_factory=list
    )  # deleted: imported from this file, gone from it (sync)
    left_over: list[str] = field(
        default_factory=list
    )  # imported from this file, gone from it, kept

    def report(self) -> list[str]:
        """One line per thing a person should know, most important first; [] when nothing happened."""
        ask = " (./hub run --sync, or mcp_import --if-found --sync, makes the file win)"
        lines = [str(change) for change in self.changes if change.action != "unchanged"]
        lines += [
            f"kept {name}: changed in the hub since it was imported{ask}"
            for name in self.kept_changed
        ]
        lines += [
            f"not re-created {name}: deleted in the hub since it was imported{ask}"
            for name in self.kept_deleted
        ]
        lines += [
            f"kept {name}: it was in the hub before this file was imported{ask}"
            for name in self.kept_foreign
        ]
        lines += [f"removed {name}: no longer in the file" for name in self.removed]
        lines += [
            f"kept {name}: no longer in the file (delete it in the hub, or use --sync)"
            for name in self.left_over
        ]
        return lines


def import_found_file(
    *,
    path: Path,
    configs: Sequence[ServerConfig],
    sync: bool = False,
    dry_run: bool = False,
    discover: bool = True,
) -> FoundFileImport:
    """Import `configs` read from the found file at `path` as the module docstring says; all or
    nothing (raises McpJsonError naming every entry that cannot be saved)."""
    key = str(Path(path).resolve())
    fingerprint = file_fingerprint(configs)
    with transaction.atomic():
        record = ImportedFile.objects.select_for_update().filter(path=key).first()
        if record is not None and record.fingerprint == fingerprint and not sync:
            return FoundFileImport(unchanged_file=True)
        imported: dict[str, str] = dict(record.servers) if record is not None else {}
        outcome, apply = _plan(configs, imported, sync=sync)
        outcome.changes = import_servers(configs=apply, dry_run=dry_run, discover=discover)
        if sync:
            outcome.removed = sorted(set(imported) - {c.name for c in configs})
        else:
            outcome.left_over = sorted(set(imported) - {c.name for c in configs})
        if not dry_run:
            McpServer.objects.filter(name__in=outcome.removed).delete()
            _record(key, fingerprint, imported, outcome)
    return outcome


def _plan(
    configs: Sequence[ServerConfig], imported: dict[str, str], *, sync: bool
) -> tuple[FoundFileImport, list[ServerConfig]]:
    outcome, apply = FoundFileImport(), []
    current = McpServer.objects.in_bulk([c.name for c in configs], field_name="name")
    for config in configs:
        server, as_imported = current.get(config.name), imported.get(config.name)
        if sync:
            apply.append(config)
        elif server is None and as_imported is not None:
            outcome.kept_deleted.append(config.name)
        elif server is None or (
            as_imported is not None and server_fingerprint(server) == as_imported
        ):
            apply.append(config)
        elif as_imported is None and _already(server, config):
            apply.append(config)  # the same as the file says: this import adopts it
        elif as_imported is None:
            outcome.kept_foreign.append(config.name)
        else:
            outcome.kept_changed.append(config.name)
    return outcome, apply


def _already(server: McpServer, config: ServerConfig) -> bool:
    return all(getattr(server, name) == value for name, value in wanted_fields(config).items())


def _record(key: str, fingerprint: str, imported: dict[str, str], outcome: FoundFileImport) -> None:
    """Remember each server as this import left it; what a person changed or deleted keeps its old
    fingerprint, so it stays theirs at the next change of the file too, and what the file no longer
    lists stays known as this file's until `--sync` removes it."""
    servers = {name: value for name, value in imported.items() if name not in outcome.removed}
    applied = {change.name for change in outcome.changes}
    for server in McpServer.objects.filter(name__in=applied):
        servers[server.name] = server_fingerprint(server)
    ImportedFile.objects.update_or_create(
        path=key, defaults={"fingerprint": fingerprint, "servers": servers}
    )
