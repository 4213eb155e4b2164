"""Introspecting a server: persist what it offers (tools, resources, templates, prompts, all pages)
and estimate what each costs in tokens.

Items that vanish are marked unavailable, never deleted, so users' selections survive a
backend's bad day; they come back as they were when the backend offers them again.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.catalog.models import McpServer, Prompt, Resource, ResourceTemplate, Tool
from apps.catalog.signals import catalog_changed
from apps.connections.listing import Discovery

# No tokenizer installs offline here (tiktoken downloads its encodings at first use), so the
# estimate is the common ~4 characters per token of the JSON a client receives for the tool.
CHARS_PER_TOKEN = 4


def estimate_tokens(entry: dict[str, Any]) -> int:
    return math.ceil(len(json.dumps(entry, separators=(",", ":"))) / CHARS_PER_TOKEN)


@dataclass
class DiscoveryReport:
    server: str
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    vanished: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.vanished)

    @property
    def changes(self) -> str:
        """What changed since the last discovery, in words: `2 new, 1 gone` or `no change`."""
        kinds = ((self.added, "new"), (self.updated, "changed"), (self.vanished, "gone"))
        return ", ".join(f"{len(items)} {word}" for items, word in kinds if items) or "no change"

    def __str__(self) -> str:
        counts = ", ".join(f"{n} {kind}" for kind, n in self.counts.items())
        return f"{self.server}: {counts} ({self.changes})"


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def _tool_fields(tool: Any) -> dict[str, Any]:
    entry = _dump(tool)
    return {
        "title": entry.get("title") or (entry.get("annotations") or {}).get("title") or "",
        "description": entry.get("description") or "",
        "input_schema": entry.get("inputSchema") or {"type": "object"},
        "output_schema": entry.get("outputSchema"),
        "annotations": entry.get("annotations"),
        "execution": entry.get("execution"),  # MCP 2025-11-25 taskSupport: passed through
        "token_estimate": estimate_tokens(entry),
    }


def _resource_fields(resource: Any) -> dict[str, Any]:
    entry = _dump(resource)
    return {
        "name": entry.get("name") or "",
        "title": entry.get("title") or "",
        "description": entry.get("description") or "",
        "mime_type": entry.get("mimeType") or "",
        "size": entry.get("size"),
        "annotations": entry.get("annotations"),
    }


def _template_fields(template: Any) -> dict[str, Any]:
    fields = _resource_fields(template)
    fields.pop("size")
    return fields


def _prompt_fields(prompt: Any) -> dict[str, Any]:
    entry = _dump(prompt)
    return {
        "title": entry.get("title") or "",
        "description": entry.get("description") or "",
        "arguments": entry.get("arguments") or [],
    }


def _sync(
    model: type,
    server: McpServer,
    key: str,
    items: dict[str, dict[str, Any]],
    report: DiscoveryReport,
    label: str,
) -> None:
    existing = {getattr(row, key): row for row in model.objects.filter(server=server)}
    now = timezone.now()
    for name, fields in items.items():
        row = existing.get(name)
        if row is None:
            model.objects.create(server=server, **{key: name}, **fields)
            report.added.append(f"{label} {name}")
        elif not row.available or any(getattr(row, f) != v for f, v in fields.items()):
            model.objects.filter(pk=row.pk).update(available=True, last_seen_at=now, **fields)
            report.updated.append(f"{label} {name}")
    gone = [name for name, row in existing.items() if row.available and name not in items]
    model.objects.filter(server=server, **{f"{key}__in": gone}).update(available=False)
    report.vanished.extend(f"{label} {name}" for name in gone)
    report.counts[f"{label}s"] = len(items)


class ServerGone(Exception):
    """The server was deleted while its discovery ran: there is nothing left to write to."""


@transaction.atomic
def apply_discovery(*, server: McpServer, discovery: Discovery) -> DiscoveryReport:
    """Write a discovery into the catalog; tell endpoints using the server if anything changed."""
    report = DiscoveryReport(server.name)
    # Two discoveries of one server may finish together (a user's first credentials start one, a
    # staff user's "Discover" another): one writes after the other, never both inserting a tool.
    if (
        McpServer.objects.select_for_update()
        .filter(pk=server.pk)
        .values_list("pk", flat=True)
        .first()
        is None
    ):
        raise ServerGone("deleted while it was being discovered; nothing written")
    _sync(Tool, server, "name", {t.name: _tool_fields(t) for t in discovery.tools}, report, "tool")
    _sync(
        Resource,
        server,
        "uri",
        {str(r.uri): _resource_fields(r) for r in discovery.resources},
        report,
        "resource",
    )
    templates = {str(t.uri_template): _template_fields(t) for t in discovery.resource_templates}
    _sync(ResourceTemplate, server, "uri_template", templates, report, "template")
    _sync(
        Prompt,
        server,
        "name",
        {p.name: _prompt_fields(p) for p in discovery.prompts},
        report,
        "prompt",
    )
    record_health(server=server, ok=True)
    if report.changed:
        transaction.on_commit(
            lambda: catalog_changed.send(sender=McpServer, server_ids=[server.pk])
        )
    return report


def record_health(*, server: McpServer, ok: bool, error: str = "", degraded: bool = False) -> None:
    """Store a health verdict; a failing server is never shown healthy."""
    now = timezone.now()
    fields: dict[str, Any] = {"last_checked_at": now}
    if ok:
        fields.update(
            status=McpServer.Status.DEGRADED if degraded else McpServer.Status.HEALTHY,
            last_ok_at=now,
        )
        fields["last_error"] = error if degraded else ""
    else:
        fields.update(status=McpServer.Status.DOWN, last_error=error[:4000])
    McpServer.objects.filter(pk=server.pk).update(**fields)
    for name, value in fields.items():
        setattr(server, name, value)


def discover_server(*, server: McpServer) -> DiscoveryReport:
    """Connect through the pool (in a worker when REDIS_URL is set), discover, persist."""
    from apps.connections.default import run_with_pool

    spec = server.to_spec()
    try:
        discovery = run_with_pool(lambda pool: pool.discover(spec))
    except Exception as exc:
        record_failure(server=server, error=_describe(exc))
        raise
    return apply_discovery(server=server, discovery=discovery)


OAUTH_REQUIRED = (
    "Requires OAuth: the backend asks each user to sign in with their own account (Connect on the "
    "Tools page, /tools/#connections); discovery needs a connected staff user. ({error})"
)


def record_failure(*, server: McpServer, error: str) -> str:
    """Record a failed discovery; an HTTP backend answering 401 with a Bearer challenge is marked as
    requiring OAuth (so users see Connect) rather than only down. Returns the error as recorded."""
    from apps.connections.auth_probe import probe

    # The SDK reports an HTTP error status (a 401 among them) as "Server returned an error response";
    # only then is the probe worth its round trip (not for timeouts or refused connections).
    maybe_refused = "error response" in error or "401" in error
    if (
        server.transport != McpServer.Transport.STDIO
        and maybe_refused
        and probe(server.url, dict(server.headers), timeout=5.0, public_only=server.public_only)
    ):
        if not server.oauth:
            McpServer.objects.filter(pk=server.pk).update(oauth=True)
            server.oauth = True
        error = OAUTH_REQUIRED.format(error=error)
    record_health(server=server, ok=False, error=error)
    return error


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if not str(exc) else str(exc)
