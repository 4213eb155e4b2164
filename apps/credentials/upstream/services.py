"""Upstream OAuth, the writes: connect a user to a backend, keep their tokens fresh, break, disconnect.

The flow: `start_connect` (discover the backend's authorization server, register the hub once
per callback URL, PKCE S256, a state bound to the user's session) → the backend's authorization
server → `finish_connect` (check state, issuer, exchange the code, store the tokens encrypted).
Where the backend's authorization server offers no dynamic registration, an administrator's
pre-registered app (UpstreamOAuthApp) is the client instead, its id and secret read at each use.
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
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken

from apps.catalog import tasks, uservars
from apps.catalog.models import McpServer
from apps.catalog.permissions import may_write_server
from apps.connections.errors import ServerUnavailable
from apps.connections.specs import ServerSpec
from apps.core import public_url
from apps.credentials.errors import CredentialsMissing
from apps.credentials.signals import credentials_changed
from apps.credentials.upstream import oauth
from apps.credentials.upstream.models import (
    UpstreamOAuthApp,
    UpstreamOAuthClient,
    UpstreamOAuthGrant,
)

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
    and runs only when someone presses Connect); with a pre-registered app, the app's."""
    challenge = oauth.probe(server.url, _plain_headers(server), public_only=server.public_only)
    app = app_of(server)
    if app is not None:
        return _app_auth(server, app, challenge)
    if challenge is None:
        raise ConnectFailed(
            f"{server.name} did not ask for OAuth (no 401 with a Bearer challenge at {server.url})."
        )
    try:
        return oauth.discover(server.url, challenge, public_only=server.public_only)
    except oauth.UpstreamOAuthError as exc:
        raise ConnectFailed(str(exc)) from exc


def _plain_headers(server: McpServer) -> dict[str, str]:
    """The server's headers without its `${oauth:…}` ones (nobody's token yet)."""
    return {k: v for k, v in server.headers.items() if not uservars.oauth_names({k: v})}


def app_of(server: McpServer) -> UpstreamOAuthApp | None:
    return UpstreamOAuthApp.objects.filter(server=server).first()


def _app_auth(
    server: McpServer, app: UpstreamOAuthApp, challenge: oauth.Challenge | None
) -> oauth.ServerAuth:
    """A pre-registered app's set-up: its authorization server; the backend's resource (RFC 8707)
    when it is MCP-authorization-aware (answers 401 with resource metadata), else none."""
    resource = None
    if challenge is not None:
        resource = oauth.resource_metadata(server.url, challenge, public_only=server.public_only)
    scope = app.scopes or (challenge.scope if challenge else None)
    if not scope and resource is not None and resource.scopes_supported:
        scope = " ".join(resource.scopes_supported)
    return oauth.ServerAuth(
        resource, app_server_metadata(app), scope or None, trusted=app_urls(app)
    )


def app_server_metadata(app: UpstreamOAuthApp) -> OAuthMetadata:
    return OAuthMetadata.model_validate(app.authorization_server)


def app_urls(app: UpstreamOAuthApp) -> tuple[str, ...]:
    """What staff chose for the app: its metadata URL, and the endpoints typed or found there."""
    metadata = app.authorization_server
    found = [app.metadata_url] + [
        str(metadata.get(key) or "")
        for key in ("authorization_endpoint", "token_endpoint", "revocation_endpoint")
    ]
    return tuple(dict.fromkeys(url for url in found if url))


def read_app_server(app: UpstreamOAuthApp) -> None:
    """Fill `app.authorization_server` from its metadata URL or its endpoints (not saved).
    Raises ValidationError naming the field, for the admin's form."""
    try:
        metadata = oauth.app_metadata(
            metadata_url=app.metadata_url,
            authorization_endpoint=app.authorization_endpoint,
            token_endpoint=app.token_endpoint,
            revocation_endpoint=app.revocation_endpoint,
        )
    except (oauth.UpstreamOAuthError, ValueError) as exc:
        field = "metadata_url" if app.metadata_url else "authorization_endpoint"
        raise ValidationError({field: str(exc)}) from exc
    app.authorization_server = metadata.model_dump(mode="json", exclude_none=True)


@transaction.atomic
def save_app(*, app: UpstreamOAuthApp) -> UpstreamOAuthApp:
    """Save a pre-registered app (its authorization server read by `read_app_server`): its server
    becomes one each user connects with their own account, and users' grants made with it keep
    working (its id and secret are read at each use)."""
    app.save()
    server = app.server
    if not server.oauth:
        server.oauth = True
        server.save(update_fields=["oauth", "updated_at"])  # endpoints re-list: Connect appears
    return app


def delete_app(*, app: UpstreamOAuthApp) -> None:
    """Forget a pre-registered app and the connections made with it (their tokens were issued to
    it); each user's endpoints rebuild without them."""
    with transaction.atomic():
        users = set(
            UpstreamOAuthGrant.objects.filter(client__app=app).values_list("user_id", flat=True)
        )
        app.delete()
        for user_id in users:
            _announce(user_id, app.server_id)


def client_info(client: UpstreamOAuthClient) -> OAuthClientInformationFull:
    """The hub's client at the authorization server: the pre-registered app's, or the registration."""
    if client.app_id is None:
        return OAuthClientInformationFull.model_validate(client.client_info)
    app = client.app
    return OAuthClientInformationFull(
        client_id=app.client_id,
        client_secret=app.client_secret or None,
        token_endpoint_auth_method=app.token_auth_method,
        redirect_uris=[client.redirect_uri],
        scope=app.scopes or None,
    )


def client_auth(client: UpstreamOAuthClient) -> oauth.ServerAuth:
    """The set-up a grant was made under; a pre-registered app's authorization server as it is now."""
    auth = oauth.ServerAuth.from_json(client.metadata)
    if client.app_id is None:
        return auth
    return dataclasses.replace(
        auth,
        authorization_server=app_server_metadata(client.app),
        trusted=app_urls(client.app),
    )


# --- Connecting ----------------------------------------------------------------------------


def start_connect(
    *, server: McpServer, user: Any, session: Any, redirect_uri: str, next_url: str
) -> str:
    """The URL of the backend's authorization page for this user; the pending request is kept in their session."""
    auth = server_auth(server=server)
    client = _registered_client(server, auth, redirect_uri)
    info = client_info(client)
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
    """One registration per backend and callback URL; again if the backend's issuer changed.
    With a pre-registered app, no registration: the app is the client."""
    client = UpstreamOAuthClient.objects.filter(server=server, redirect_uri=redirect_uri).first()
    issuer = str(auth.authorization_server.issuer)
    if app := app_of(server):
        client, _ = UpstreamOAuthClient.objects.update_or_create(
            server=server,
            redirect_uri=redirect_uri,
            defaults={
                "app": app,
                "metadata": {"issuer": issuer, **auth.to_json()},
                "client_info": {},
            },
        )
        return client
    if client is not None and client.app_id is None and client.metadata.get("issuer") == issuer:
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
            "app": None,
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
        info = client_info(client)
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
    auth, info = client_auth(grant.client), client_info(grant.client)
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
    <the user's own token>` for a server requiring OAuth whose headers do not place the token
    themselves (`${oauth:…}`, see `template_tokens`), {} for any other. Raises CredentialsMissing."""
    if not server.oauth or uservars.oauth_names(server.headers):
        return {}
    return {"Authorization": f"Bearer {access_token(server=server, user_id=user_id)}"}


def template_tokens(server: McpServer, user_id: int) -> dict[str, str]:
    """`${oauth:NAME}` → the user's own access token, for the header values that ask for one
    (refreshed first when about to expire). Raises CredentialsMissing ("connect" / "reconnect", or
    no app to connect with)."""
    names = uservars.oauth_names(server.headers)
    if not names:
        return {}
    if names != {server.name}:
        raise CredentialsMissing(
            server.name,
            f"Server {server.name}'s headers ask for the OAuth token of "
            f"{', '.join(sorted(names))}: a server takes only its own (${{oauth:{server.name}}}); "
            "an administrator corrects the header.",
        )
    if not server.oauth:
        raise no_app(server)
    return {server.name: access_token(server=server, user_id=user_id)}


def no_app(server: McpServer) -> CredentialsMissing:
    """A header template waits for an app nobody registered yet (the backend cannot tell the hub
    where its users sign in)."""
    return CredentialsMissing(
        server.name,
        f"Server {server.name} passes each user's OAuth token in a header, but there is no OAuth "
        "app to connect it with: an administrator registers one (admin: Upstream OAuth apps).",
    )


def token_headers(server: McpServer, token: str) -> dict[str, str]:
    """The headers carrying `token` for `server`: its `${oauth:…}` header values, else
    `Authorization: Bearer`. (Such a value holds the placeholder alone, so nothing else is lost.)"""
    templated = {k: v for k, v in server.headers.items() if uservars.oauth_names({k: v})}
    if not templated:
        return {"Authorization": f"Bearer {token}"}
    return {
        k: uservars.substitute(v, {}, tokens={server.name: token}) for k, v in templated.items()
    }


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
    auth, info = client_auth(grant.client), client_info(grant.client)
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
    grant = (
        UpstreamOAuthGrant.objects.select_related("server")
        .filter(server__name=spec.name, user_id=user_id)
        .first()
    )
    if grant is None or not grant.server.oauth:
        return None
    if grant.broken:
        raise connect_hint(grant.server.name, broken=True)
    current = grant.tokens.get("access_token", "")
    if current and any(current in value for value in spec.headers.values()):
        if not oauth.token_refused(spec.url, spec.headers, public_only=spec.public_only):
            return None  # the backend takes the token: the failure was something else
        grant = refresh(grant_id=grant.pk, rejected_token=current)
    fresh = token_headers(grant.server, grant.tokens["access_token"])
    return dataclasses.replace(spec, headers={**spec.headers, **fresh})
