"""Upstream OAuth, the writes: connect a user to a backend, keep their tokens fresh, break, disconnect.

The flow: `start_connect` (discover the backend's authorization server, register the hub once
per callback URL, PKCE S256, a state bound to the user's session) → the backend's authorization
server → `finish_connect` (check state, issuer, exchange the code, store the tokens encrypted).
`access_token` is what a call uses: the user's own token, refreshed before it expires (one
refresh at a time per grant, across processes), or a clear "connect"/"reconnect" error — never
another user's token.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from apps.catalog import tasks
from apps.catalog.models import McpServer
from apps.catalog.permissions import may_write_server
from apps.connections.auth_probe import probe
from apps.connections.errors import ServerUnavailable
from apps.connections.specs import ServerSpec
from apps.core import public_url
from apps.credentials.errors import CredentialsMissing
from apps.credentials.signals import credentials_changed
from apps.credentials.upstream import oauth
from apps.credentials.upstream.models import UpstreamOAuthClient, UpstreamOAuthGrant

logger = logging.getLogger(__name__)

SESSION_KEY = "mcphub_upstream_oauth"
PENDING_SECONDS = 600  # an authorization started longer ago than this is refused at the callback
MAX_PENDING = 5  # per session: a few tabs at once, not an unbounded pile
CONNECT_PAGE = "/tools/#connections"
_LOCK_SECONDS = 30


class ConnectFailed(Exception):
    """The connect flow failed; the message is safe to show the user (never a token or secret)."""


@dataclass(frozen=True)
class Connected:
    server: McpServer
    scope: str


def connect_hint(server_name: str, *, broken: bool) -> CredentialsMissing:
    """The error a call gets without a usable grant: what to do, and where (never anyone else's token)."""
    where = public_url.absolute(CONNECT_PAGE)
    if broken:
        message = (
            f"Server {server_name} refused your OAuth sign-in (revoked or expired): reconnect {server_name} "
            f"at {where} (the Reconnect button), then call again."
        )
    else:
        message = (
            f"Server {server_name} needs your own OAuth sign-in: connect {server_name} at {where} "
            "(the Connect button), then call again."
        )
    return CredentialsMissing(server_name, message, fill_at=where)


# --- The backend's authorization server ----------------------------------------------------


def server_auth(*, server: McpServer) -> oauth.ServerAuth:
    """The backend's authorization set-up, discovered from its 401 challenge (not cached: it is cheap
    and runs only when someone presses Connect)."""
    challenge = oauth.probe(server.url, dict(server.headers), public_only=server.public_only)
    if challenge is None:
        raise ConnectFailed(
            f"{server.name} did not ask for OAuth (no 401 with a Bearer challenge at {server.url})."
        )
    try:
        return oauth.discover(server.url, challenge, public_only=server.public_only)
    except oauth.UpstreamOAuthError as exc:
        raise ConnectFailed(str(exc)) from exc


# --- Connecting ----------------------------------------------------------------------------


def start_connect(
    *, server: McpServer, user: Any, session: Any, redirect_uri: str, next_url: str
) -> str:
    """The URL of the backend's authorization page for this user; the pending request is kept in their session."""
    auth = server_auth(server=server)
    client = _registered_client(server, auth, redirect_uri)
    info = OAuthClientInformationFull.model_validate(client.client_info)
    state = secrets.token_urlsafe(32)
    request = oauth.authorization_request(
        server.url, auth, info, redirect_uri=redirect_uri, state=state
    )
    pending = _pending(session)
    pending[state] = {
        "server": server.pk,
        "user": user.pk,
        "client": client.pk,
        "verifier": request.code_verifier,
        "metadata": auth.to_json(),
        "next": next_url,
        "at": time.time(),
    }
    session[SESSION_KEY] = dict(
        sorted(pending.items(), key=lambda item: item[1]["at"])[-MAX_PENDING:]
    )
    return request.url


def _registered_client(
    server: McpServer, auth: oauth.ServerAuth, redirect_uri: str
) -> UpstreamOAuthClient:
    """One registration per backend and callback URL; again if the backend's issuer changed."""
    client = UpstreamOAuthClient.objects.filter(server=server, redirect_uri=redirect_uri).first()
    issuer = str(auth.authorization_server.issuer)
    if client is not None and client.metadata.get("issuer") == issuer:
        return client
    try:
        info = oauth.register(
            server.url,
            auth,
            redirect_uri=redirect_uri,
            client_name=f"MCP Hub ({server.name})",
            public_only=server.public_only,
        )
    except oauth.UpstreamOAuthError as exc:
        raise ConnectFailed(str(exc)) from exc
    client, _ = UpstreamOAuthClient.objects.update_or_create(
        server=server,
        redirect_uri=redirect_uri,
        defaults={
            "metadata": {"issuer": issuer, **auth.to_json()},
            "client_info": info.model_dump(mode="json", exclude_none=True),
        },
    )
    return client


def _pending(session: Any) -> dict[str, dict[str, Any]]:
    now = time.time()
    return {
        state: p
        for state, p in session.get(SESSION_KEY, {}).items()
        if now - p["at"] < PENDING_SECONDS
    }


def finish_connect(*, user: Any, session: Any, params: dict[str, str]) -> tuple[Connected, str]:
    """Complete the callback: (what was connected, where to go next). Raises ConnectFailed."""
    pending = _pending(session)
    entry = pending.pop(params.get("state", ""), None)
    session[SESSION_KEY] = pending
    if entry is None or entry["user"] != user.pk:
        raise ConnectFailed(
            "This sign-in was not started from this browser session, or it expired: press Connect again."
        )
    server = McpServer.objects.filter(pk=entry["server"]).first()
    client = UpstreamOAuthClient.objects.filter(pk=entry["client"], server=server).first()
    if server is None or client is None:
        raise ConnectFailed("The server was removed while you were signing in.")
    if params.get("error"):
        description = params.get("error_description", "")[:200]
        raise ConnectFailed(
            f"{server.name} did not grant access: {params['error'][:60]}"
            + (f" ({description})" if description else "")
        )
    auth = oauth.ServerAuth.from_json(entry["metadata"])
    token = _exchange(server, auth, client, params, entry["verifier"])
    _store(
        server=server, user=user, client=client, token=token, scope=token.scope or auth.scope or ""
    )
    if server.enabled and server.last_ok_at is None and may_write_server(user, server):
        # A staff user's first sign-in is what a never-discovered server was waiting for.
        tasks.request_discovery(server_ids=[server.pk], user_id=user.pk)
    return Connected(server, token.scope or ""), entry["next"]


def _exchange(
    server: McpServer,
    auth: oauth.ServerAuth,
    client: UpstreamOAuthClient,
    params: dict[str, str],
    verifier: str,
) -> OAuthToken:
    if not params.get("code"):
        raise ConnectFailed(f"{server.name}'s authorization server sent no code back.")
    try:
        oauth.check_issuer(auth, params.get("iss"))
        info = OAuthClientInformationFull.model_validate(client.client_info)
        return oauth.exchange_code(
            server.url,
            auth,
            info,
            code=params["code"],
            code_verifier=verifier,
            redirect_uri=client.redirect_uri,
            public_only=server.public_only,
        )
    except oauth.UpstreamOAuthError as exc:
        raise ConnectFailed(f"Could not finish connecting {server.name}: {exc}") from exc


def _store(
    *, server: McpServer, user: Any, client: UpstreamOAuthClient, token: OAuthToken, scope: str
) -> None:
    with transaction.atomic():
        UpstreamOAuthGrant.objects.update_or_create(
            server=server,
            user=user,
            defaults={
                "client": client,
                "tokens": _tokens(token),
                "scope": scope[:1000],
                **_expiry(token),
                "broken": False,
                "problem": "",
                "refreshed_at": None,
            },
        )
        _announce(user.pk, server.pk)


def _tokens(token: OAuthToken, previous_refresh: str = "") -> dict[str, str]:
    return {
        "access_token": token.access_token,
        "refresh_token": token.refresh_token or previous_refresh,
    }


def _expiry(token: OAuthToken) -> dict[str, Any]:
    if token.expires_in is None:
        return {"expires_at": None, "lifetime": None}
    return {
        "expires_at": timezone.now() + timedelta(seconds=int(token.expires_in)),
        "lifetime": max(0, int(token.expires_in)),
    }


def _announce(user_id: int, server_id: int) -> None:
    transaction.on_commit(
        lambda: credentials_changed.send(
            sender=UpstreamOAuthGrant, user_id=user_id, server_id=server_id
        )
    )


def disconnect(*, server: McpServer, user: Any) -> bool:
    """Forget the user's grant (after asking the authorization server to revoke it, best effort)."""
    grant = (
        UpstreamOAuthGrant.objects.select_related("client", "server")
        .filter(server=server, user=user)
        .first()
    )
    if grant is None:
        return False
    _revoke_at_server(grant)
    with transaction.atomic():
        grant.delete()
        _announce(user.pk, server.pk)
    return True


def _revoke_at_server(grant: UpstreamOAuthGrant) -> None:
    token, hint = grant.tokens.get("refresh_token"), "refresh_token"
    if not token:
        token, hint = grant.tokens.get("access_token"), "access_token"
    if not token:
        return
    auth = oauth.ServerAuth.from_json(grant.client.metadata)
    info = OAuthClientInformationFull.model_validate(grant.client.client_info)
    if not oauth.revoke(
        grant.server.url, auth, info, token=token, hint=hint, public_only=grant.server.public_only
    ):
        logger.info(
            "upstream OAuth: revoking user %s's grant at %s failed; forgotten here anyway",
            grant.user_id,
            grant.server.name,
        )


# --- Using a grant -------------------------------------------------------------------------


def authorization_headers(server: McpServer, user_id: int) -> dict[str, str]:
    """The per-user headers of `apps.credentials.selectors.spec_for_user`: `Authorization: Bearer
    <the user's own token>` for a server requiring OAuth, {} for any other. Raises
    CredentialsMissing."""
    if not server.oauth:
        return {}
    return {"Authorization": f"Bearer {access_token(server=server, user_id=user_id)}"}


def access_token(*, server: McpServer, user_id: int) -> str:
    """The user's own access token for `server`, refreshed first if it is about to expire.

    Raises CredentialsMissing when the user has not connected the server or must reconnect it.
    """
    grant = UpstreamOAuthGrant.objects.filter(server=server, user_id=user_id).first()
    if grant is None or grant.broken:
        raise connect_hint(server.name, broken=grant is not None)
    if grant.refresh_due():
        grant = refresh(grant_id=grant.pk)
    return grant.tokens["access_token"]


def refresh(*, grant_id: int, rejected_token: str | None = None) -> UpstreamOAuthGrant:
    """Refresh one grant, at most once at a time across processes; concurrent callers get its result.

    `rejected_token`: the backend refused this access token; refresh unless the grant already
    moved past it. A refusal by the authorization server marks the grant broken (reconnect).
    """
    with _refresh_lock(grant_id):
        grant = UpstreamOAuthGrant.objects.select_related("server", "client").get(pk=grant_id)
        stale = (
            grant.tokens.get("access_token") == rejected_token
            if rejected_token
            else grant.refresh_due()
        )
        if grant.broken or not stale:
            if grant.broken:
                raise connect_hint(grant.server.name, broken=True)
            return grant
        return _refresh_now(grant)


def _refresh_now(grant: UpstreamOAuthGrant) -> UpstreamOAuthGrant:
    refresh_token = grant.tokens.get("refresh_token")
    if not refresh_token:
        return mark_broken(
            grant=grant,
            problem="the access token expired and the authorization server gave no refresh token",
        )
    auth = oauth.ServerAuth.from_json(grant.client.metadata)
    info = OAuthClientInformationFull.model_validate(grant.client.client_info)
    try:
        token = oauth.refresh(
            grant.server.url,
            auth,
            info,
            refresh_token=refresh_token,
            public_only=grant.server.public_only,
        )
    except oauth.GrantRejected as exc:
        current = UpstreamOAuthGrant.objects.select_related("server", "client").get(pk=grant.pk)
        if current.tokens.get("refresh_token") not in (None, refresh_token):
            return current  # another process rotated it meanwhile (the lock is per process when embedded)
        return mark_broken(grant=grant, problem=str(exc))
    # Any other failure (AS unreachable) leaves the grant as it is: the next call tries again.
    with transaction.atomic():
        grant.tokens = _tokens(token, previous_refresh=refresh_token)
        for field, value in _expiry(token).items():
            setattr(grant, field, value)
        grant.refreshed_at = timezone.now()
        grant.save(update_fields=["tokens", "expires_at", "lifetime", "refreshed_at", "updated_at"])
    # No announcement: views holding the old token rebuild at its refresh point (`fresh_until`), the
    # old token still works until it expires, and a refresh is no reason to tell clients the list changed.
    logger.info(
        "upstream OAuth: refreshed user %s's token for %s", grant.user_id, grant.server.name
    )
    return grant


def mark_broken(*, grant: UpstreamOAuthGrant, problem: str) -> UpstreamOAuthGrant:
    """The grant no longer works: the user must connect again. Raises the "reconnect" error."""
    with transaction.atomic():
        UpstreamOAuthGrant.objects.filter(pk=grant.pk).update(
            broken=True, problem=problem[:500], tokens={}, updated_at=timezone.now()
        )
        _announce(grant.user_id, grant.server_id)
    logger.warning(
        "upstream OAuth: user %s's grant for %s stopped working: %s",
        grant.user_id,
        grant.server.name,
        problem,
    )
    raise connect_hint(grant.server.name, broken=True)


@contextmanager
def _refresh_lock(grant_id: int) -> Iterator[None]:
    """A cache lock (Redis in production, process memory embedded): rotation makes a refresh
    token single-use, so two concurrent refreshes would break the grant."""
    key, owner = f"mcphub:upstream-oauth:refresh:{grant_id}", secrets.token_hex(8)
    deadline = time.monotonic() + _LOCK_SECONDS
    while not cache.add(key, owner, timeout=_LOCK_SECONDS):
        if time.monotonic() > deadline:
            raise ServerUnavailable(
                "", "Refreshing the OAuth token is taking too long; try again in a moment."
            )
        time.sleep(0.05)
    try:
        yield
    finally:
        if cache.get(key) == owner:
            cache.delete(key)


# --- After a refused call ------------------------------------------------------------------


def renewed_spec(spec: ServerSpec, user_id: int) -> ServerSpec | None:
    """A call with `spec` (carrying the user's bearer token) failed. If the backend refuses that
    token, the spec with the user's refreshed one; CredentialsMissing ("reconnect") when the
    authorization server refuses the grant too; None when the token is not the problem.
    """
    presented = spec.headers.get("Authorization", "").removeprefix("Bearer ")
    grant = (
        UpstreamOAuthGrant.objects.select_related("server")
        .filter(server__name=spec.name, user_id=user_id)
        .first()
    )
    if not presented or grant is None or not grant.server.oauth:
        return None
    if grant.broken:
        raise connect_hint(grant.server.name, broken=True)
    if grant.tokens.get("access_token") == presented:
        if probe(spec.url, spec.headers, public_only=spec.public_only) is None:
            return None  # the backend takes the token: the failure was something else
        grant = refresh(grant_id=grant.pk, rejected_token=presented)
    return dataclasses.replace(
        spec, headers={**spec.headers, "Authorization": f"Bearer {grant.tokens['access_token']}"}
    )
