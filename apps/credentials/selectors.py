"""Reads of per-user credentials, and THE place that turns (server, user) into the spec for that
user's calls: `spec_for_user`. Every call path (gateway endpoint, dynamic mode, chat, runs) gets its
specs through it, via the endpoint views built in toolsets.exposure and discovery.catalog.

A server without `${user:NAME}` variables and not requiring OAuth keeps its one shared spec (one
connection for everyone). A server with either gets one spec per user: their values substituted
or their token added — as `Authorization: Bearer` for an MCP-authorization-aware backend, or where
a header value says `Bearer ${oauth:NAME}` (a plain OAuth 2 API behind the server) — and
`partition="u<user id>"`, so the pool holds one connection (one stdio child) per user.

Hot path: this runs when an endpoint's view is built (once per endpoint version per process), never
per call. A change of a user's values bumps that user's endpoint versions (signal
`credentials_changed`, received in toolsets), so the next call uses the new spec.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from apps.catalog import uservars
from apps.catalog.models import McpServer
from apps.connections.specs import ServerSpec
from apps.core import public_url
from apps.credentials.errors import CredentialsMissing
from apps.credentials.models import UserCredential
from apps.credentials.upstream.selectors import staff_with_grants
from apps.credentials.upstream.services import authorization_headers, no_app, template_tokens

# --- per-user headers -----------------------------------------------------------------------


def _user_headers(server: McpServer, user_id: int) -> dict[str, str]:
    """Extra headers for `user_id`'s calls to `server` (HTTP servers only): a server requiring OAuth
    gets the user's own `Authorization: Bearer …` (upstream OAuth), or `CredentialsMissing` saying
    what to do ("connect", "reconnect"). Any header makes the server's spec per user.

    Runs when a user's endpoint view is built, not per call; a refreshed token sends
    `credentials_changed`, so the user's views rebuild."""
    if server.transport == McpServer.Transport.STDIO:
        return {}
    return authorization_headers(server, user_id)


# --- specs ----------------------------------------------------------------------------------


def partition_for(user_id: int) -> str:
    return f"u{user_id}"


def spec_for_user(
    server: McpServer, user_id: int, *, stored: Mapping[str, str] | None = None
) -> ServerSpec:
    """The spec for `user_id`'s calls to `server`; raises `CredentialsMissing` naming what to fill, where.

    `stored` is the user's saved values when the caller already read them (see `specs_for_user`);
    None reads them here (one query).
    """
    variables = server.user_variable_list()
    extra = _user_headers(server, user_id)
    tokens = _oauth_tokens(server, user_id)
    if not variables and not extra and not tokens:
        return server.to_spec()
    values = dict(stored) if stored is not None else stored_values(server, user_id)
    missing = [v for v in variables if v.required and not values.get(v.name)]
    if missing:
        raise credentials_missing(server, missing)
    return _personal_spec(server, user_id, values, extra, tokens)


def _oauth_tokens(server: McpServer, user_id: int) -> dict[str, str]:
    """The user's tokens for the server's `${oauth:NAME}` header values (HTTP servers only)."""
    if server.transport == McpServer.Transport.STDIO:
        return {}
    return template_tokens(server, user_id)


def _personal_spec(
    server: McpServer,
    user_id: int,
    values: Mapping[str, str],
    extra: Mapping[str, str],
    tokens: Mapping[str, str],
) -> ServerSpec:
    spec = server.to_spec()
    if server.transport == McpServer.Transport.STDIO:
        changes: dict[str, Any] = {
            "env": {k: uservars.substitute(v, values) for k, v in spec.env.items()}
        }
    else:
        headers = {
            k: uservars.substitute(v, values, tokens=tokens) for k, v in spec.headers.items()
        }
        changes = {
            "headers": {**headers, **extra},
            "url": uservars.substitute(spec.url, values, in_url=True),
        }
    return dataclasses.replace(spec, partition=partition_for(user_id), **changes)


def specs_for_user(
    servers: Iterable[McpServer], user_id: int
) -> tuple[dict[str, ServerSpec], dict[str, CredentialsMissing]]:
    """`spec_for_user` for many servers with one query: (specs by name, why not by name)."""
    servers = list(servers)
    personal = [s.pk for s in servers if s.user_variable_list()]
    saved = dict(
        UserCredential.objects.filter(user_id=user_id, server_id__in=personal).values_list(
            "server_id", "values"
        )
    )
    specs: dict[str, ServerSpec] = {}
    missing: dict[str, CredentialsMissing] = {}
    for server in servers:
        try:
            specs[server.name] = spec_for_user(server, user_id, stored=saved.get(server.pk, {}))
        except CredentialsMissing as exc:
            missing[server.name] = exc
    return specs, missing


def stored_values(server: McpServer, user_id: int) -> dict[str, str]:
    row = UserCredential.objects.filter(user_id=user_id, server=server).only("values").first()
    return dict(row.values) if row is not None else {}


def credentials_missing(
    server: McpServer, missing: list[uservars.UserVariable]
) -> CredentialsMissing:
    fill_at = public_url.absolute(reverse("web:server_credentials", args=[server.name]))
    api = f"/api/servers/{server.name}/my-credentials/"
    wanted = ", ".join(
        f"{v.name}" + (f" ({v.label})" if v.label != v.name else "") for v in missing
    )
    message = (
        f"Server {server.name} needs your credentials: fill {wanted} on {fill_at} "
        f'(or PUT {api} with {{"values": {{"{missing[0].name}": "…"}}}}), then call again.'
    )
    return CredentialsMissing(
        server.name, message, missing=[v.name for v in missing], fill_at=fill_at, api=api
    )


def spec_for_operation(server: McpServer, user: Any = None) -> ServerSpec:
    """Discovery and health checks (`catalog.operations.operational_spec`): the values of the user
    running it, else the server owner's; a background task (no user) uses the owner's."""
    if uservars.oauth_names(server.headers) and not server.oauth:
        raise no_app(server)
    if not server.user_variable_list() and not server.oauth:
        return server.to_spec()  # nothing differs per user: the shared spec
    candidates = [
        u for u in (user, server.owner) if u is not None and getattr(u, "is_authenticated", False)
    ]
    if server.oauth:
        # Upstream OAuth: else a staff user who connected it (most recently refreshed first).
        candidates += staff_with_grants(server)
    for candidate in dict.fromkeys(candidates):
        try:
            return spec_for_user(server, candidate.pk)
        except CredentialsMissing as exc:
            first_problem = exc
    if server.oauth and not server.user_variable_list():
        raise CredentialsMissing(
            server.name,
            f"{server.name} requires OAuth: it is discovered and checked with the sign-in of the staff user who runs "
            "it, its owner, or another staff user who connected it, and none has: connect it (Connect on the Servers "
            "or Tools page), then discover it again.",
        )
    if candidates:
        who = " or ".join(sorted({c.get_username() for c in candidates}))
        raise CredentialsMissing(
            server.name,
            f"{server.name} uses each user's own credentials; it is discovered and checked with the values of "
            f"the user who runs it or of its owner, and {who} has not filled them. {first_problem.message}",
        )
    raise CredentialsMissing(
        server.name,
        f"{server.name} uses each user's own credentials and has no owner whose values background checks "
        "could use: a staff user who filled theirs can run Discover or Test (or set an owner).",
    )


# --- what is filled -------------------------------------------------------------------------


@dataclass(frozen=True)
class VariableState:
    """One variable as its user sees it: never the value, only whether it is set."""

    name: str
    label: str
    help_text: str
    required: bool
    used_in: str
    is_set: bool


def variable_states(server: McpServer, user_id: int) -> list[VariableState]:
    filled = set(
        UserCredential.objects.filter(user_id=user_id, server=server)
        .values_list("names", flat=True)
        .first()
        or []
    )
    return [
        VariableState(v.name, v.label, v.help_text, v.required, v.used_in, v.name in filled)
        for v in server.user_variable_list()
    ]


def servers_needing_credentials(servers: Iterable[McpServer], user_id: int) -> dict[str, list[str]]:
    """Server name → required variables `user_id` has not filled, for servers where some are missing."""
    servers = [s for s in servers if s.user_variable_list()]
    filled = dict(
        UserCredential.objects.filter(user_id=user_id, server__in=servers).values_list(
            "server_id", "names"
        )
    )
    needing = {}
    for server in servers:
        missing = [
            v.name
            for v in server.user_variable_list()
            if v.required and v.name not in (filled.get(server.pk) or [])
        ]
        if missing:
            needing[server.name] = missing
    return needing


def filled_by_users(server: McpServer) -> list[UserCredential]:
    """Who filled what for `server` (the rows, for names and dates; their values stay unread)."""
    return list(
        UserCredential.objects.filter(server=server)
        .select_related("user")
        .defer("values")
        .order_by("user__username")
    )
