"""User variables: values each user fills for themselves, written into a server's config as `${user:NAME}`.

A shared server declares one by using the placeholder in an env value (stdio) or a header value or
the URL (HTTP), e.g. `"env": {"GITHUB_TOKEN": "${user:GITHUB_TOKEN}"}`. The placeholders stay in the
stored config (and in exports); `apps.credentials` substitutes each user's own values when it builds
the spec for that user's calls. Label, help text and "required" are optional metadata kept in
`McpServer.user_variables`; a placeholder without metadata is required and labelled by its name.

Pure: no ORM, so `.mcp.json` parsing can use it too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
PLACEHOLDER_RE = re.compile(r"\$\{user:([^}]*)\}")
MAX_VALUE_LENGTH = 8192
META_KEYS = {"name", "label", "help_text", "required"}


@dataclass(frozen=True)
class UserVariable:
    name: str
    label: str
    help_text: str = ""
    required: bool = True
    used_in: str = (
        ""  # where the value goes, for people: `env GITHUB_TOKEN`, `header Authorization`, `URL`
    )


def names_in(text: str) -> list[str]:
    return [m.group(1) for m in PLACEHOLDER_RE.finditer(text)]


def placements(
    *, transport: str, env: Mapping[str, str], headers: Mapping[str, str], url: str
) -> dict[str, str]:
    """Every user variable the config uses → where (first use wins), in the config's order."""
    if transport == "stdio":
        places = [(f"env {key}", value) for key, value in env.items()]
    else:
        places = [(f"header {key}", value) for key, value in headers.items()] + [("URL", url)]
    found: dict[str, str] = {}
    for where, value in places:
        for name in names_in(str(value)):
            found.setdefault(name, where)
    return found


def declared(
    placed: Mapping[str, str], metadata: Iterable[Mapping[str, Any]]
) -> list[UserVariable]:
    """The variables a server uses, with their metadata (or defaults)."""
    meta = {m.get("name"): m for m in metadata if isinstance(m, Mapping)}
    return [
        UserVariable(
            name=name,
            label=str(meta.get(name, {}).get("label") or name),
            help_text=str(meta.get(name, {}).get("help_text") or ""),
            required=bool(meta.get(name, {}).get("required", True)),
            used_in=where,
        )
        for name, where in placed.items()
    ]


def problems(
    *,
    transport: str,
    env: Mapping[str, str],
    headers: Mapping[str, str],
    url: str,
    elsewhere: Mapping[str, str],
    metadata: Any,
) -> dict[str, str]:
    """Field → message for every misuse: bad names, placeholders where they cannot go, bad metadata."""
    errors: dict[str, str] = {}
    for field, text in elsewhere.items():
        if PLACEHOLDER_RE.search(text):
            errors[field] = (
                "${user:NAME} may only be used in env values (stdio) or header values and the URL (HTTP): "
                "arguments and commands show up in process listings."
            )
    fields = (
        {"env": env.values()}
        if transport == "stdio"
        else {"headers": headers.values(), "url": [url]}
    )
    for field, values in fields.items():
        bad = [n for v in values for n in names_in(str(v)) if not NAME_RE.match(n)]
        if bad:
            errors[field] = (
                f"${{user:{bad[0]}}}: a user variable name is letters, digits and '_', not starting with a digit."
            )
    if metadata_error := _metadata_problem(
        metadata, placements(transport=transport, env=env, headers=headers, url=url)
    ):
        errors["user_variables"] = metadata_error
    return errors


def _metadata_problem(metadata: Any, placed: Mapping[str, str]) -> str:
    if not isinstance(metadata, list) or not all(isinstance(m, dict) for m in metadata):
        return 'Must be a list of objects like {"name": "GITHUB_TOKEN", "label": "GitHub token", "help_text": "…", "required": true}.'
    for entry in metadata:
        name = entry.get("name")
        if unknown := set(entry) - META_KEYS:
            return f"{name or 'an entry'}: unknown keys {', '.join(sorted(unknown))} (use {', '.join(sorted(META_KEYS))})."
        if not isinstance(name, str) or name not in placed:
            return (
                f"{name!r} is described but no config value uses ${{user:{name}}}; write the placeholder into an "
                "env value (stdio) or a header value or the URL (HTTP)."
            )
        if not all(
            isinstance(entry.get(k, ""), str) for k in ("label", "help_text")
        ) or not isinstance(entry.get("required", True), bool):
            return f"{name}: label and help_text must be text, required true or false."
    names = [m["name"] for m in metadata]
    if len(names) != len(set(names)):
        return "Each variable may be described once."
    return ""


# What may surround a `${user:NAME}` in a value that is shown and exported as written: an auth
# scheme, nothing of the admin's secrets.
_PUBLIC_REST_RE = re.compile(r"^(?:(?:Bearer|Basic|Token|token|Bot) )?$")


def is_public_value(value: str) -> bool:
    """`${user:GITHUB_TOKEN}`, `Bearer ${user:TOKEN}` or `Bearer ${oauth:github}`: each user's own
    value or token, no stored secret in it."""
    if OAUTH_VALUE_RE.match(value):
        return True
    return bool(names_in(value)) and bool(_PUBLIC_REST_RE.match(PLACEHOLDER_RE.sub("", value)))


_ANY_PLACEHOLDER_RE = re.compile(r"\$\{(user|oauth):([^}]*)\}")


def substitute(
    text: str,
    values: Mapping[str, str],
    *,
    in_url: bool = False,
    tokens: Mapping[str, str] | None = None,
) -> str:
    """`text` with each `${user:NAME}` replaced by the user's value ('' when not filled) and, given
    `tokens`, each `${oauth:NAME}` by the user's access token — in one pass, so no value is read
    as a placeholder."""

    def value(match: re.Match[str]) -> str:
        kind, name = match.groups()
        if kind == "oauth":
            if tokens is None:
                return match.group(0)
            found = tokens.get(name, "")
        else:
            found = values.get(name, "")
        return quote(found, safe="") if in_url else found

    return _ANY_PLACEHOLDER_RE.sub(value, text)


# --- ${oauth:NAME}: a user's upstream OAuth access token, for backends that take a bearer header --

OAUTH_PLACEHOLDER_RE = re.compile(r"\$\{oauth:([^}]*)\}")
# The whole header value: an optional auth scheme and the placeholder (nothing stored beside it).
OAUTH_VALUE_RE = re.compile(r"^(?:(?:Bearer|Basic|Token|token|Bot) )?\$\{oauth:([^}]*)\}$")


def oauth_names(headers: Mapping[str, str]) -> set[str]:
    """The servers whose tokens `${oauth:NAME}` placeholders in these header values ask for."""
    return {m.group(1) for v in headers.values() for m in OAUTH_PLACEHOLDER_RE.finditer(str(v))}


def oauth_problems(
    *,
    server_name: str,
    transport: str,
    env: Mapping[str, str],
    headers: Mapping[str, str],
    url: str,
    elsewhere: Mapping[str, str],
) -> dict[str, str]:
    """Field → message for every misplaced `${oauth:NAME}`: only whole HTTP header values
    (`Bearer ${oauth:NAME}`), and only the server's own name — a server receives its own users'
    tokens for itself, never a token meant for another server."""
    errors: dict[str, str] = {}
    outside = {**elsewhere, "env": " ".join(map(str, env.values()))}
    if transport == "stdio":
        outside["headers"] = " ".join(map(str, headers.values()))
    else:
        outside["url"] = url
    for field, text in outside.items():
        if OAUTH_PLACEHOLDER_RE.search(text or ""):
            errors[field] = (
                "${oauth:NAME} may only be a header value of an HTTP server, "
                "e.g. Authorization: Bearer ${oauth:NAME}."
            )
    if transport == "stdio":
        return errors
    for key, value in headers.items():
        names = OAUTH_PLACEHOLDER_RE.findall(str(value))
        if not names:
            continue
        if not OAUTH_VALUE_RE.match(str(value)):
            errors["headers"] = (
                f"{key}: write the whole value as `Bearer ${{oauth:{names[0]}}}` (an auth scheme "
                "and the placeholder, nothing else)."
            )
        elif names[0] != server_name:
            errors["headers"] = (
                f"{key}: ${{oauth:{names[0]}}} must name this server (${{oauth:{server_name}}}): "
                "a server receives only its own users' tokens for itself."
            )
    return errors


def value_problem(value: str) -> str:
    """Why a filled value cannot be used ('' if it can): it ends up in a header or an environment."""
    if not isinstance(value, str):
        return "must be text"
    if len(value) > MAX_VALUE_LENGTH:
        return f"is too long (at most {MAX_VALUE_LENGTH} characters)"
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        return "may not contain line breaks or control characters"
    return ""
