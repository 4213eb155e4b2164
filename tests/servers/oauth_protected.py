"""An OAuth-protected MCP server that is its own authorization server:
`python oauth_protected.py PORT [--token-ttl SECONDS] [--no-registration]`.

Built on the SDK's server-side auth (`MCPServer(auth=…, auth_server_provider=…)`), which serves
RFC 9728 protected resource metadata, RFC 8414 AS metadata, dynamic client registration, the
authorize/token/revoke endpoints with PKCE S256, and answers 401 with
`WWW-Authenticate: Bearer resource_metadata=…` without a valid token. This module adds the
in-memory provider (codes, rotating refresh tokens, short access tokens), an approve page where
a test (or a person) picks who they are at this backend, admin endpoints a test drives
(`POST /admin/revoke` subject=…, `GET /admin/stats`, and `POST /admin/clients` client_id=…
client_secret=… redirect_uri=… [auth_method=…]: an app registered by hand, as an administrator
does where `--no-registration` turns dynamic registration off), and a `whoami` tool.
"""

from __future__ import annotations

import argparse
import html
import secrets
import time
from dataclasses import dataclass, field

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp_types import ToolAnnotations
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

SCOPES = ["mcp", "offline_access"]


@dataclass
class Grant:
    """One subject's consent to one client: survives refreshes, ends with revocation."""

    id: str
    subject: str
    client_id: str
    scopes: list[str]
    resource: str | None
    revoked: bool = False
    generation: int = 0  # access tokens issued so far (1 = first, 2 = after one refresh, ...)


@dataclass
class Store:
    token_ttl: int
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    pending: dict[str, tuple[str, AuthorizationParams]] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    grants: dict[str, Grant] = field(default_factory=dict)
    access: dict[str, tuple[AccessToken, str]] = field(
        default_factory=dict
    )  # token -> (token, grant id)
    refresh: dict[str, tuple[RefreshToken, str]] = field(default_factory=dict)
    refreshes: dict[str, int] = field(default_factory=dict)  # subject -> successful refreshes
    authorize_requests: list[dict[str, str | None]] = field(default_factory=list)


class Provider:
    """In-memory authorization server; an approved request becomes a grant with rotating tokens."""

    def __init__(self, store: Store, base_url: str) -> None:
        self.store = store
        self.base_url = base_url

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.store.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.store.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        if not params.state:
            raise AuthorizeError("invalid_request", "state is required")
        request_id = secrets.token_urlsafe(16)
        self.store.pending[request_id] = (client.client_id, params)
        self.store.authorize_requests.append(
            {"client_id": client.client_id, "resource": params.resource}
        )
        return f"{self.base_url}/approve?request={request_id}"

    def approve(self, request_id: str, subject: str) -> str:
        client_id, params = self.store.pending.pop(request_id)
        code = AuthorizationCode(
            code=secrets.token_urlsafe(32),
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            client_id=client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=subject,
        )
        self.store.codes[code.code] = code
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    def deny(self, request_id: str) -> str:
        _, params = self.store.pending.pop(request_id)
        return construct_redirect_uri(
            str(params.redirect_uri), error="access_denied", state=params.state
        )

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        code = self.store.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        if self.store.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "authorization code already used")
        grant = Grant(
            secrets.token_hex(4),
            authorization_code.subject or "?",
            client.client_id,
            authorization_code.scopes,
            authorization_code.resource,
        )
        self.store.grants[grant.id] = grant
        return self._issue(grant)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        found = self.store.refresh.get(refresh_token)
        if (
            found is None
            or found[0].client_id != client.client_id
            or self.store.grants[found[1]].revoked
        ):
            return None
        return found[0]

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        _, grant_id = self.store.refresh.pop(
            refresh_token.token
        )  # rotation: a refresh token works once
        grant = self.store.grants[grant_id]
        self.store.refreshes[grant.subject] = self.store.refreshes.get(grant.subject, 0) + 1
        return self._issue(grant)

    def _issue(self, grant: Grant) -> OAuthToken:
        grant.generation += 1
        access, refresh = f"at-{secrets.token_urlsafe(24)}", f"rt-{secrets.token_urlsafe(24)}"
        expires_at = int(time.time()) + self.store.token_ttl
        common = {
            "client_id": grant.client_id,
            "scopes": grant.scopes,
            "resource": grant.resource,
            "subject": grant.subject,
        }
        self.store.access[access] = (
            AccessToken(token=access, expires_at=expires_at, **common),
            grant.id,
        )
        self.store.refresh[refresh] = (RefreshToken(token=refresh, **common), grant.id)
        return OAuthToken(
            access_token=access,
            expires_in=self.store.token_ttl,
            scope=" ".join(grant.scopes),
            refresh_token=refresh,
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.store.access.get(token)
        if found is None or self.store.grants[found[1]].revoked:
            return None
        if found[0].expires_at is not None and found[0].expires_at < time.time():
            return None
        return found[0]

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        found = self.store.access.get(token.token) or self.store.refresh.get(token.token)
        if found is not None:
            self.store.grants[found[1]].revoked = True

    def grant_of(self, token: str) -> Grant | None:
        found = self.store.access.get(token)
        return self.store.grants[found[1]] if found else None

    def revoke_subject(self, subject: str) -> int:
        grants = [g for g in self.store.grants.values() if g.subject == subject and not g.revoked]
        for grant in grants:
            grant.revoked = True
        return len(grants)


def build(port: int, token_ttl: int, registration: bool = True) -> tuple[MCPServer, Provider]:
    base = f"http://127.0.0.1:{port}"
    provider = Provider(Store(token_ttl), base)
    auth = AuthSettings(
        issuer_url=base,
        resource_server_url=f"{base}/mcp",
        required_scopes=["mcp"],
        validate_token_resource=True,
        client_registration_options=ClientRegistrationOptions(
            enabled=registration, valid_scopes=SCOPES, default_scopes=["mcp"]
        ),
        revocation_options=RevocationOptions(enabled=True),
    )
    server = MCPServer(
        "oauth-protected",
        version="1.0",
        auth=auth,
        auth_server_provider=provider,
        log_level="WARNING",
    )

    @server.tool(
        annotations=ToolAnnotations(read_only_hint=True)
    )  # unmarked, an LLM's call would wait for approval
    def whoami() -> dict[str, object]:
        """Who the presented token belongs to at this backend: subject, grant and token generation."""
        token = get_access_token()
        grant = provider.grant_of(token.token) if token else None
        if grant is None:
            return {"subject": None}
        return {
            "subject": grant.subject,
            "grant": grant.id,
            "generation": grant.generation,
            "client_id": grant.client_id,
        }

    @server.tool(
        annotations=ToolAnnotations(read_only_hint=True)
    )  # unmarked, an LLM's call would wait for approval
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.custom_route("/approve", methods=["GET", "POST"])
    async def approve(request: Request) -> Response:
        if request.method == "GET":
            request_id = request.query_params.get("request", "")
            if request_id not in provider.store.pending:
                return HTMLResponse("unknown authorization request", status_code=400)
            return HTMLResponse(_APPROVE_PAGE.format(request=html.escape(request_id)))
        form = await request.form()
        request_id = str(form.get("request", ""))
        if request_id not in provider.store.pending:
            return HTMLResponse("unknown authorization request", status_code=400)
        if form.get("action") == "deny":
            return RedirectResponse(provider.deny(request_id), status_code=302)
        subject = str(form.get("subject", "")).strip()
        if not subject:
            return HTMLResponse("say who you are", status_code=400)
        return RedirectResponse(provider.approve(request_id, subject), status_code=302)

    @server.custom_route("/admin/revoke", methods=["POST"])
    async def admin_revoke(request: Request) -> Response:
        form = await request.form()
        return JSONResponse({"revoked": provider.revoke_subject(str(form.get("subject", "")))})

    @server.custom_route("/admin/clients", methods=["POST"])
    async def admin_clients(request: Request) -> Response:
        form = await request.form()
        client = OAuthClientInformationFull(
            client_id=str(form["client_id"]),
            client_secret=str(form["client_secret"]),
            redirect_uris=[str(form["redirect_uri"])],
            token_endpoint_auth_method=str(form.get("auth_method") or "client_secret_post"),
            grant_types=["authorization_code", "refresh_token"],
            scope=" ".join(SCOPES),
        )
        await provider.register_client(client)
        return JSONResponse({"client_id": client.client_id})

    @server.custom_route("/admin/stats", methods=["GET"])
    async def admin_stats(request: Request) -> Response:
        store = provider.store
        return JSONResponse(
            {
                "clients": len(store.clients),
                "refreshes": store.refreshes,
                "grants": [
                    {
                        "id": g.id,
                        "subject": g.subject,
                        "revoked": g.revoked,
                        "generation": g.generation,
                        "resource": g.resource,
                        "client_id": g.client_id,
                    }
                    for g in store.grants.values()
                ],
                "authorize_requests": store.authorize_requests,
            }
        )

    return server, provider


_APPROVE_PAGE = """<!doctype html><title>Approve</title>
<form method="post" action="/approve">
<input type="hidden" name="request" value="{request}">
<label>Who are you here? <input name="subject" id="subject"></label>
<button name="action" value="approve" id="approve">Approve</button>
<button name="action" value="deny" id="deny">Deny</button>
</form>"""


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--token-ttl", type=int, default=3600)
    parser.add_argument("--no-registration", action="store_true")
    options = parser.parse_args()
    mcp_server, _ = build(options.port, options.token_ttl, not options.no_registration)
    mcp_server.run("streamable-http", host="127.0.0.1", port=options.port)
