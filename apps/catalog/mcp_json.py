"""`.mcp.json` files: parse and render Claude Desktop / Claude Code / Cursor / VS Code configs.

Pure: no ORM and no Django import, so the hub launcher can call `find_mcp_json` before Django is
set up. Parsing validates the whole file and raises one `McpJsonError` listing every problem, each
naming the entry and the field (`mcpServers.github.args: must be a list of strings`).
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal
from urllib.parse import urlsplit

# Mirrors apps.catalog.models.SERVER_NAME_RE (a test keeps the two equal).
SERVER_NAME_RE = r"^[a-z0-9][a-z0-9_-]{0,39}$"
SERVER_NAME_MAX = 40
# Mirror the admin form: names a process environment and an HTTP request can actually carry.
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HEADER_NAME_RE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
# Column sizes of McpServer, checked here so a long value is a clear error, not a DataError.
MAX_LENGTHS = {"command": 1024, "cwd": 1024, "url": 2048}

STDIO, STREAMABLE_HTTP, SSE, OPENAPI = "stdio", "streamable_http", "sse", "openapi"
TYPE_ALIASES = {
    "stdio": STDIO,
    "http": STREAMABLE_HTTP,
    "streamable-http": STREAMABLE_HTTP,
    "streamablehttp": STREAMABLE_HTTP,
    "streamable_http": STREAMABLE_HTTP,
    "sse": SSE,
    "openapi": OPENAPI,  # the hub's extension: a REST API described by an OpenAPI document
}
STDIO_KEYS = {"command", "args", "env", "cwd"}
REMOTE_KEYS = {"url", "headers"}
OPENAPI_KEYS = {"openapi", "include", "exclude"}
KNOWN_KEYS = {"type", "disabled", "timeout", *STDIO_KEYS, *REMOTE_KEYS, *OPENAPI_KEYS}
# An openapi entry's credential for the document's security scheme NAME: `scheme:NAME`.
OPENAPI_HEADER_RE = re.compile(r"^(?:scheme:)?[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
ROOT_KEYS = ("mcpServers", "servers")
# ${VAR}, ${env:VAR}, ${VAR:-default}, ${env:VAR:-default}; ${user:NAME} and ${oauth:NAME} are
# kept as written (each hub user's own value or token, see apps/catalog/uservars.py)
USER_PLACEHOLDER_RE = re.compile(r"^(?:user|oauth):")
PLACEHOLDER_RE = re.compile(r"\$\{([^}]*)\}")
VARIABLE_RE = re.compile(r"^(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$", re.DOTALL)

Style = Literal["claude", "vscode"]


class McpJsonError(Exception):
    """A file that cannot be imported; `errors` lists every problem found, not just the first."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class ServerConfig:
    """One server entry, validated, variables expanded, in the hub's own vocabulary."""

    name: str
    transport: str
    key: str = ""  # the entry's key in the file; differs from name when it had to be normalized
    location: str = ""  # where the entry sits in the file, for messages: `mcpServers.github`
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str = ""
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    enabled: bool = True
    timeout: int | None = None
    openapi: str = ""  # type openapi: the document's URL
    openapi_document: str = ""  # ...or the document itself (JSON text), written in the file
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Frozen all the way down: a parsed config cannot be edited on its way to the database.
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))
        object.__setattr__(self, "headers", MappingProxyType(dict(self.headers)))

    @property
    def display_name(self) -> str:
        return self.key if self.key and self.key != self.name else ""


@dataclass(frozen=True)
class McpJsonFile:
    servers: tuple[ServerConfig, ...]
    warnings: tuple[str, ...] = ()


# --- Finding a file -------------------------------------------------------------------------


def candidate_paths(
    *, environ: Mapping[str, str] | None = None, home: Path | None = None, cwd: Path | None = None
) -> list[Path]:
    """Where to look for a config, in order: the same places the usual seed tools look."""
    environ = os.environ if environ is None else environ
    home = Path.home() if home is None else home
    cwd = Path.cwd() if cwd is None else cwd
    paths = [Path(environ["MCP_JSON_PATH"]).expanduser()] if environ.get("MCP_JSON_PATH") else []
    return [
        *paths,
        home / ".lmstudio" / "mcp.json",
        cwd / ".mcp.json",
        home / ".mcp.json",
        cwd.parent / ".mcp.json",
    ]


def find_mcp_json(
    *, environ: Mapping[str, str] | None = None, home: Path | None = None, cwd: Path | None = None
) -> Path | None:
    """The first existing file of `candidate_paths`, or None."""
    return next(
        (p for p in candidate_paths(environ=environ, home=home, cwd=cwd) if p.is_file()), None
    )


# --- Parsing ------------------------------------------------------------------------------


def read_mcp_json(path: Path, *, environ: Mapping[str, str] | None = None) -> McpJsonFile:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise McpJsonError([f"{path}: cannot read the file ({exc})"]) from None
    return parse_mcp_json(text, environ=environ)


def parse_mcp_json(text: str, *, environ: Mapping[str, str] | None = None) -> McpJsonFile:
    """Validate a whole file and return its servers, or raise McpJsonError listing every problem."""
    parsed, errors = parse_mcp_json_entries(text, environ=environ)
    if errors:
        raise McpJsonError(errors)
    return parsed


def parse_mcp_json_entries(
    text: str, *, environ: Mapping[str, str] | None = None
) -> tuple[McpJsonFile, list[str]]:
    """The entries without problems, and every problem of the others (a preview names them all).

    Problems of the whole file (not JSON, no mcpServers object) still raise McpJsonError.
    """
    environ = os.environ if environ is None else environ
    data, warnings = _load_json(text)
    root, entries = _find_entries(data)
    if "inputs" in data:
        warnings.append(
            "inputs: ignored (VS Code prompts for these; use ${env:NAME} variables instead)"
        )
    errors: list[str] = []
    servers, sound = [], []
    for key, raw in entries.items():
        before = len(errors)
        server = _parse_entry(root, key, raw, environ, errors, warnings)
        servers.append(server)
        if server is not None and len(errors) == before:
            sound.append(server)
    _check_unique_names(root, servers, errors)
    names = Counter(server.name for server in servers if server is not None)
    sound = [server for server in sound if names[server.name] == 1]
    return McpJsonFile(servers=tuple(sound), warnings=tuple(warnings)), errors


def _load_json(text: str) -> tuple[Any, list[str]]:
    try:
        return json.loads(text), []
    except json.JSONDecodeError as exc:
        error = f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
    # VS Code and Cursor allow comments and trailing commas in their config files.
    try:
        return json.loads(_strip_jsonc(text)), [
            "file has comments or trailing commas (JSONC); read anyway"
        ]
    except json.JSONDecodeError:
        raise McpJsonError([error]) from None


def _strip_jsonc(text: str) -> str:
    token = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/|,(?=\s*[}\]])', re.DOTALL)
    return token.sub(lambda m: m.group() if m.group().startswith('"') else "", text)


def _find_entries(data: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(data, dict):
        raise McpJsonError(
            ["the file must hold a JSON object with a mcpServers (or VS Code servers) object"]
        )
    present = [key for key in ROOT_KEYS if key in data]
    if len(present) == 2:
        raise McpJsonError(["the file has both mcpServers and servers: keep one of them"])
    if not present:
        raise McpJsonError(
            ["no mcpServers object (Claude, Cursor) or servers object (VS Code) in the file"]
        )
    root = present[0]
    if not isinstance(data[root], dict):
        raise McpJsonError([f"{root}: must be an object mapping server names to their settings"])
    return root, data[root]


def _where(root: str, key: str) -> str:
    return f"{root}.{key}" if re.fullmatch(r"[A-Za-z0-9_-]+", key) else f"{root}[{json.dumps(key)}]"


def _parse_entry(
    root: str,
    key: str,
    raw: Any,
    environ: Mapping[str, str],
    errors: list[str],
    warnings: list[str],
) -> ServerConfig | None:
    where = _where(root, key)
    if not isinstance(raw, dict):
        errors.append(f"{where}: must be an object")
        return None
    name = normalize_server_name(key)
    if not name:
        errors.append(f"{where}: cannot make a server name from this key (use letters or digits)")
    for unknown in sorted(set(raw) - KNOWN_KEYS):
        warnings.append(f"{where}.{unknown}: unknown key, ignored")
    entry = _Entry(where, raw, environ, errors)
    transport = entry.transport()
    if transport is None:
        return None
    if transport == OPENAPI:
        fields = entry.openapi_fields()
    else:
        fields = entry.stdio_fields() if transport == STDIO else entry.remote_fields()
    unused = (REMOTE_KEYS if transport == STDIO else STDIO_KEYS) | (
        set() if transport == OPENAPI else OPENAPI_KEYS
    )
    for ignored in sorted(set(raw) & unused):
        warnings.append(f"{where}.{ignored}: not used by a {transport} server, ignored")
    return ServerConfig(
        name=name,
        key=key,
        location=where,
        transport=transport,
        enabled=entry.enabled(),
        timeout=entry.timeout(),
        **fields,
    )


class _Entry:
    """Reads one entry's fields, appending a message to `errors` for each bad one."""

    def __init__(
        self, where: str, raw: dict[str, Any], environ: Mapping[str, str], errors: list[str]
    ) -> None:
        self.where, self.raw, self.environ, self.errors = where, raw, environ, errors

    def error(self, path: str, message: str) -> None:
        self.errors.append(f"{self.where}.{path}: {message}")

    def transport(self) -> str | None:
        kind = self.raw.get("type")
        if kind is None:
            return self._guess_transport()
        if not isinstance(kind, str) or kind.lower() not in TYPE_ALIASES:
            allowed = ", ".join(
                sorted({"stdio", "http", "streamable-http", "streamableHttp", "sse"})
            )
            self.error("type", f"unknown type {json.dumps(kind)} (use one of: {allowed})")
            return None
        transport = TYPE_ALIASES[kind.lower()]
        needed = {STDIO: "command", OPENAPI: "openapi"}.get(transport, "url")
        if needed not in self.raw:
            self.error(needed, f"missing: a {kind} server needs a {needed}")
            return None
        return transport

    def _guess_transport(self) -> str | None:
        has_command, has_url = "command" in self.raw, "url" in self.raw
        if "openapi" in self.raw and not has_command:
            return OPENAPI
        if has_command and has_url:
            self.errors.append(
                f"{self.where}: has both command and url; add a type (stdio, http or sse)"
            )
        elif not has_command and not has_url:
            self.errors.append(
                f"{self.where}: needs a command (local server) or a url (remote server)"
            )
        else:
            return STDIO if has_command else STREAMABLE_HTTP
        return None

    def stdio_fields(self) -> dict[str, Any]:
        for key in ("command", "args", "cwd"):
            if "${user:" in json.dumps(self.raw.get(key, "")):
                self.error(
                    key,
                    "${user:NAME} may only be used in env values (arguments show up in process listings)",
                )
        return {
            "command": self.text("command", required=True),
            "args": self.string_list("args"),
            "env": self.string_map("env", ENV_NAME_RE, "an environment variable name"),
            "cwd": self.text("cwd"),
        }

    def remote_fields(self) -> dict[str, Any]:
        url = self.text("url", required=True)
        if url and not _is_http_url(url):
            self.error(
                "url", f"must be an http:// or https:// URL with a host, not {json.dumps(url)}"
            )
        return {
            "url": url,
            "headers": self.string_map("headers", HEADER_NAME_RE, "an HTTP header name"),
        }

    def openapi_fields(self) -> dict[str, Any]:
        """`{"type": "openapi", "openapi": "<document URL>" or {the document}, "url": "<base URL,
        optional>", "headers": {"scheme:NAME": "…"}, "include": […], "exclude": […]}`: a document
        registered by upload is exported whole, as a JSON object, so importing the file again
        brings it back."""
        inline = self.raw.get("openapi")
        if isinstance(inline, dict):
            fields = {"openapi": "", "url": self.text("url")}
            fields["openapi_document"] = json.dumps(inline, separators=(",", ":"))
        else:
            fields = {"openapi": self.text("openapi", required=True), "url": self.text("url")}
        for key in ("openapi", "url"):
            if fields[key] and not _is_http_url(fields[key]):
                self.error(
                    key,
                    f"must be an http:// or https:// URL with a host, not {json.dumps(fields[key])}",
                )
        return {
            **fields,
            "headers": self.string_map(
                "headers", OPENAPI_HEADER_RE, "an HTTP header name or scheme:NAME"
            ),
            "include": self.string_list("include"),
            "exclude": self.string_list("exclude"),
        }

    def text(self, key: str, *, required: bool = False) -> str:
        value = self.raw.get(key, "")
        if not isinstance(value, str):
            self.error(key, "must be a string")
            return ""
        value = self.expand(key, value).strip()
        if required and not value:
            self.error(key, "must not be empty")
        if len(value) > MAX_LENGTHS.get(key, len(value)):
            self.error(key, f"too long (at most {MAX_LENGTHS[key]} characters)")
        return value

    def string_list(self, key: str) -> tuple[str, ...]:
        value = self.raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            self.error(key, "must be a list of strings")
            return ()
        return tuple(self.expand(f"{key}[{i}]", item) for i, item in enumerate(value))

    def string_map(self, key: str, name_re: re.Pattern[str], what: str) -> dict[str, str]:
        value = self.raw.get(key, {})
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            self.error(key, "must be an object mapping names to string values")
            return {}
        for name in value:
            if not name_re.match(name):
                self.error(f"{key}.{name}", f"{json.dumps(name)} is not {what}")
        return {name: self.expand(f"{key}.{name}", v) for name, v in value.items()}

    def enabled(self) -> bool:
        disabled = self.raw.get("disabled", False)
        if not isinstance(disabled, bool):
            self.error("disabled", "must be true or false")
        return disabled is not True

    def timeout(self) -> int | None:
        value = self.raw.get("timeout")
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.error("timeout", "must be a whole number of seconds, at least 1")
            return None
        return value

    def expand(self, path: str, value: str) -> str:
        expanded, missing = expand_variables(value, self.environ)
        for problem in missing:
            self.error(path, problem)
        return expanded


def expand_variables(value: str, environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """Expand ${VAR}, ${env:VAR} and ${VAR:-default}; returns the value and a list of problems."""
    problems: list[str] = []

    def replace(match: re.Match[str]) -> str:
        if USER_PLACEHOLDER_RE.match(match.group(1)):
            return match.group()
        parsed = VARIABLE_RE.match(match.group(1))
        if parsed is None:
            problems.append(
                f"cannot expand {match.group()} (only ${{VAR}}, ${{env:VAR}} and ${{VAR:-default}})"
            )
            return match.group()
        name, default = parsed.groups()
        if environ.get(name):
            return environ[name]
        if default is not None:
            return default
        if name in environ:
            return ""
        problems.append(
            f"environment variable {name} is not set and {match.group()} has no default"
        )
        return match.group()

    return PLACEHOLDER_RE.sub(replace, value), problems


def _is_http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError on a malformed port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and not re.search(r"\s", url)


def normalize_server_name(key: str) -> str:
    """`key` if it is already a valid server name, else a deterministic valid one ('' if none)."""
    if re.match(SERVER_NAME_RE, key):
        return key
    ascii_key = unicodedata.normalize("NFKD", key).encode("ascii", "ignore").decode().lower()
    name = re.sub(r"[^a-z0-9_-]+", "-", ascii_key).lstrip("-_")
    return name[:SERVER_NAME_MAX].rstrip("-")


def _check_unique_names(root: str, servers: list[ServerConfig | None], errors: list[str]) -> None:
    seen: dict[str, str] = {}
    for server in servers:
        if server is None or not server.name:
            continue
        if server.name in seen:
            errors.append(
                f"{server.location}: its server name {server.name!r} is also the name of "
                f"{_where(root, seen[server.name])}; rename one of them"
            )
        seen.setdefault(server.name, server.key)


# --- Rendering ----------------------------------------------------------------------------


def env_placeholder(name: str) -> str:
    """What an exported env value becomes without secrets: `${GITHUB_TOKEN}`."""
    return "${" + re.sub(r"[^A-Za-z0-9_]", "_", name) + "}"


def header_placeholder(server: str, header: str) -> str:
    """What an exported header value becomes without secrets: `${MCP_GITHUB_AUTHORIZATION}`."""
    return "${" + re.sub(r"[^A-Z0-9_]", "_", f"MCP_{server}_{header}".upper()) + "}"


def render_mcp_json(servers: Iterable[ServerConfig], *, style: Style = "claude") -> str:
    """A config file for `servers`: Claude style (`mcpServers`) or VS Code style (`servers`)."""
    entries = {(server.key or server.name): _render_entry(server, style) for server in servers}
    return json.dumps({"mcpServers" if style == "claude" else "servers": entries}, indent=2) + "\n"


def _render_entry(server: ServerConfig, style: Style) -> dict[str, Any]:
    if server.transport == STDIO:
        entry: dict[str, Any] = {"type": "stdio"} if style == "vscode" else {}
        entry |= {"command": server.command, "args": list(server.args)}
        entry |= {"env": dict(server.env)} if server.env else {}
        entry |= {"cwd": server.cwd} if server.cwd else {}
    elif server.transport == OPENAPI:
        document = json.loads(server.openapi_document) if server.openapi_document else None
        entry = {"type": "openapi", "openapi": server.openapi or document, "url": server.url}
        entry |= {"headers": dict(server.headers)} if server.headers else {}
        entry |= {"include": list(server.include)} if server.include else {}
        entry |= {"exclude": list(server.exclude)} if server.exclude else {}
    else:
        entry = {"type": "sse" if server.transport == SSE else "http", "url": server.url}
        entry |= {"headers": dict(server.headers)} if server.headers else {}
    entry |= {"timeout": server.timeout} if server.timeout is not None else {}
    # VS Code has no such key; we still write it so a round trip keeps the server disabled.
    entry |= {} if server.enabled else {"disabled": True}
    return entry
