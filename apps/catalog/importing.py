"""Apply parsed `.mcp.json` configs to the catalog, and build `.mcp.json` exports from it.

An import validates every entry against the database first and then writes all of them in one
transaction: a file with one bad entry changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from apps.accounts.models import Team, User
from apps.catalog import openapi, tasks, uservars
from apps.catalog.mcp_json import (
    McpJsonError,
    ServerConfig,
    Style,
    env_placeholder,
    header_placeholder,
    normalize_server_name,
    parse_mcp_json_entries,
    render_mcp_json,
)
from apps.catalog.models import McpServer

Action = Literal["created", "updated", "unchanged"]


@dataclass(frozen=True)
class ServerChange:
    """What an import did (or, in a dry run, would do) to one server; never carries secret values."""

    name: str
    transport: str
    action: Action
    fields: tuple[str, ...] = ()

    def __str__(self) -> str:
        changed = f": {', '.join(self.fields)}" if self.fields else ""
        return f"{self.action} {self.name} ({self.transport}){changed}"


@dataclass(frozen=True)
class _Scope:
    visibility: str
    owner: User | None = None
    team: Team | None = None

    @classmethod
    def of(cls, *, owner: User | None, team: Team | None) -> _Scope:
        if owner is not None and team is not None:
            raise ValueError("Import servers either for one owner or for one team, not both.")
        if owner is not None:
            return cls(McpServer.Visibility.PRIVATE, owner=owner)
        if team is not None:
            return cls(McpServer.Visibility.TEAM, team=team)
        return cls(McpServer.Visibility.GLOBAL)

    def holds(self, server: McpServer) -> bool:
        return (server.visibility, server.owner_id, server.team_id) == (
            self.visibility,
            self.owner.pk if self.owner else None,
            self.team.pk if self.team else None,
        )

    def describe(self) -> str:
        if self.owner is not None:
            return f"private to {self.owner.get_username()}"
        return f"shared with team {self.team.slug}" if self.team is not None else "global"


def import_servers(
    *,
    configs: Sequence[ServerConfig],
    owner: User | None = None,
    team: Team | None = None,
    dry_run: bool = False,
    discover: bool = True,
    stdio_allowed: bool = True,
) -> list[ServerChange]:
    """Create or update one server per config, matched by name; all or nothing.

    `owner` makes the servers private to that user, `team` shares them with that team, neither
    makes them global. An existing server of another scope is an error, not a silent move.
    Without `stdio_allowed`, creating or changing a stdio server (or turning one into a remote
    one) is an error too: its command runs on the hub's host.
    Servers created or changed are discovered after commit (`discover=False`: the caller will).
    Raises McpJsonError listing every entry that cannot be saved.
    """
    scope = _Scope.of(owner=owner, team=team)
    with transaction.atomic():
        existing = McpServer.objects.select_for_update().in_bulk(
            [c.name for c in configs], field_name="name"
        )
        was_stdio = {
            name
            for name, server in existing.items()
            if server.transport == McpServer.Transport.STDIO
        }
        plans = [_plan(config, existing.get(config.name), scope) for config in configs]
        errors = [error for _, _, plan_errors in plans for error in plan_errors]
        if not stdio_allowed:
            errors += _stdio_refusals(configs, [change for _, change, _ in plans], was_stdio)
        if errors:
            raise McpJsonError(errors)
        if not dry_run:
            saved = [server for server, change, _ in plans if change.action != "unchanged"]
            for server in saved:
                server.save()
            if discover:
                tasks.discover_if_due(servers=saved)
    return [change for _, change, _ in plans]


@dataclass(frozen=True)
class ImportResult:
    changes: list[ServerChange]
    warnings: tuple[str, ...] = ()


def import_mcp_json(
    *,
    text: str,
    environ: Mapping[str, str],
    owner: User | None = None,
    team: Team | None = None,
    dry_run: bool = False,
    stdio_allowed: bool = True,
) -> ImportResult:
    """Parse a whole config's text and import it (or plan it, `dry_run`): the pages' way in.

    `environ` expands `${VAR}` placeholders. Without `stdio_allowed`, creating or changing a
    stdio server (its command runs on the hub's host) is an error. Raises McpJsonError naming
    every problem.
    """
    parsed, errors = parse_mcp_json_entries(text, environ=environ)
    plan = {"configs": parsed.servers, "owner": owner, "team": team, "stdio_allowed": stdio_allowed}
    try:
        # The entries that parsed are checked against the database too, so one preview names every problem.
        changes = import_servers(**plan, dry_run=True)
    except McpJsonError as exc:
        errors += exc.errors
    if errors:
        raise McpJsonError(errors)
    if dry_run:
        return ImportResult(changes=changes, warnings=parsed.warnings)
    try:
        changes = import_servers(**plan)
    except IntegrityError as exc:
        # Someone else wrote a server of the same name meanwhile; the transaction rolled back.
        raise McpJsonError([f"a concurrent change got in the way ({exc}); try again"]) from None
    return ImportResult(changes=changes, warnings=parsed.warnings)


def _stdio_refusals(
    configs: Sequence[ServerConfig], changes: Sequence[ServerChange], was_stdio: set[str]
) -> list[str]:
    stdio = McpServer.Transport.STDIO
    return [
        f"{config.location}: creating or changing a stdio server needs the 'manage stdio servers' "
        "permission (its command runs on the hub's host)"
        for config, change in zip(configs, changes, strict=True)
        if change.action != "unchanged" and (change.transport == stdio or change.name in was_stdio)
    ]


def _plan(
    config: ServerConfig, server: McpServer | None, scope: _Scope
) -> tuple[McpServer, ServerChange, list[str]]:
    wanted = wanted_fields(config)
    if server is None:
        server = McpServer(
            name=config.name,
            visibility=scope.visibility,
            owner=scope.owner,
            team=scope.team,
            timeout=settings.MCPHUB_DEFAULT_SERVER_TIMEOUT,
        )
        action: Action = "created"
    elif not scope.holds(server):
        other = _Scope(server.visibility, owner=server.owner, team=server.team).describe()
        message = (
            f"{config.location}: server {config.name!r} already exists and is {other}; "
            f"this import would make it {scope.describe()} (change it in the admin, or rename the entry)"
        )
        return server, ServerChange(config.name, config.transport, "unchanged"), [message]
    else:
        action = "updated"
    changed = tuple(name for name, value in wanted.items() if getattr(server, name) != value)
    for name, value in wanted.items():
        setattr(server, name, value)
    # Labels of user variables the file no longer uses go with them.
    used = {v.name for v in server.user_variable_list()}
    server.user_variables = [
        m for m in server.user_variables or [] if isinstance(m, dict) and m.get("name") in used
    ]
    if action == "updated" and not changed:
        action = "unchanged"
    change = ServerChange(
        config.name, config.transport, action, changed if action == "updated" else ()
    )
    if config.transport == McpServer.Transport.OPENAPI and (
        errors := _load_document(server, config, changed if action != "created" else ("transport",))
    ):
        return server, change, errors
    return server, change, _validation_errors(server, config)


def wanted_fields(config: ServerConfig) -> dict[str, Any]:
    """The server's fields as the file states them; what the file cannot say is left alone."""
    wanted: dict[str, Any] = {
        "transport": config.transport,
        "command": config.command,
        "args": list(config.args),
        "env": dict(config.env),
        "cwd": config.cwd,
        "url": config.url,
        "headers": dict(config.headers),
        "enabled": config.enabled,
    }
    if config.transport == McpServer.Transport.OPENAPI:
        wanted["openapi_source"] = config.openapi
        wanted["openapi_filters"] = _filters(config)
        if config.openapi_document:  # written in the file: loaded (and compared) as written there
            wanted["openapi_document"] = config.openapi_document
        if not config.url:
            del wanted["url"]  # the document's own servers name it (filled when it is fetched)
    if config.display_name:
        wanted["display_name"] = config.display_name
    if config.timeout is not None:
        wanted["timeout"] = config.timeout
    return wanted


def _filters(config: ServerConfig) -> dict[str, list[str]]:
    return {
        key: list(rules)
        for key, rules in (("include", config.include), ("exclude", config.exclude))
        if rules
    }


def _load_document(server: McpServer, config: ServerConfig, changed: tuple[str, ...]) -> list[str]:
    """An openapi entry's document, fetched when the server is new or its source or URL changed
    (or read from the file, when written there and changed)."""
    if server.openapi_document and not {
        "openapi_source",
        "openapi_document",
        "url",
        "transport",
    } & set(changed):
        return []
    values = {
        "openapi_source": config.openapi,
        "openapi_document": config.openapi_document,
        "url": config.url,
    }
    try:
        loaded = openapi.complete(values, public_only=server.public_only)
    except ValidationError as exc:
        return [
            f"{config.location}.{'openapi' if field == 'openapi_source' else field}: {message}"
            for field, messages in exc.message_dict.items()
            for message in messages
        ]
    server.openapi_document, server.url = loaded["openapi_document"], loaded["url"]
    return []


def _validation_errors(server: McpServer, config: ServerConfig) -> list[str]:
    # The parser already checked URLs; URLField's validator would refuse single-label hosts
    # such as `http://github-mcp:8080/mcp`, which are normal inside docker compose.
    try:
        server.full_clean(exclude=["url"], validate_unique=False)
    except ValidationError as exc:
        return [
            f"{config.location}{'' if field == '__all__' else '.' + field}: {message}"
            for field, messages in exc.message_dict.items()
            for message in messages
        ]
    return []


# --- Export --------------------------------------------------------------------------------


@dataclass(frozen=True)
class McpJsonExport:
    text: str
    count: int
    # Placeholders written instead of secrets: set these before importing the file again.
    variables: tuple[str, ...] = ()


def export_servers(
    *,
    servers: Iterable[McpServer] | None = None,
    style: Style = "claude",
    include_secrets: bool = False,
) -> McpJsonExport:
    """Render servers (all of them by default) as a config file that `import_servers` takes back.

    Without `include_secrets`, env and header values become `${NAME}` placeholders.
    """
    # Built-in servers are the hub's own: another hub makes its own, and their URL means nothing outside.
    servers = [
        s
        for s in (McpServer.objects.order_by("name") if servers is None else servers)
        if not s.is_builtin
    ]
    configs = [server_config(server, include_secrets=include_secrets) for server in servers]
    variables = set()
    if not include_secrets:
        values = [value for c in configs for value in [*c.env.values(), *c.headers.values()]]
        variables = {value[2:-1] for value in values if not uservars.is_public_value(value)}
    return McpJsonExport(
        render_mcp_json(configs, style=style), len(configs), tuple(sorted(variables))
    )


def server_config(server: McpServer, *, include_secrets: bool = False) -> ServerConfig:
    env, headers = dict(server.env), dict(server.headers)
    if not include_secrets:
        env = {
            name: value if uservars.is_public_value(value) else env_placeholder(name)
            for name, value in env.items()
        }
        headers = {
            name: value
            if uservars.is_public_value(value)
            else header_placeholder(server.name, name)
            for name, value in headers.items()
        }
    return ServerConfig(
        name=server.name,
        key=_export_key(server),
        transport=server.transport,
        command=server.command,
        args=tuple(server.args),
        env=env,
        cwd=server.cwd,
        url=server.url,
        headers=headers,
        enabled=server.enabled,
        timeout=None
        if server.timeout == settings.MCPHUB_DEFAULT_SERVER_TIMEOUT
        else server.timeout,
        openapi=server.openapi_source,
        openapi_document="" if server.openapi_source else server.openapi_document,
        include=tuple((server.openapi_filters or {}).get("include") or ()),
        exclude=tuple((server.openapi_filters or {}).get("exclude") or ()),
    )


def _export_key(server: McpServer) -> str:
    # A display name that normalizes back to the server's name is the key it was imported under.
    if server.display_name and normalize_server_name(server.display_name) == server.name:
        return server.display_name
    return server.name
