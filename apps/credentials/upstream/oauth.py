"""The hub as an OAuth 2.1 client of a backend MCP server: the protocol steps, no models.

Built from the `mcp` SDK's client pieces: its metadata models (`ProtectedResourceMetadata`,
`OAuthMetadata`, `OAuthClientMetadata`, `OAuthClientInformationFull`, `OAuthToken`), the
`WWW-Authenticate` parser, the RFC 9728 / RFC 8414 discovery URL builders, the registration
request/response helpers, `PKCEParameters`, the RFC 9207 `iss` check, and `OAuthContext` for
client authentication at the token endpoint and the RFC 8707 resource URL.

Not `OAuthClientProvider` itself: it is an httpx `Auth` flow that runs the whole authorization
inside one request of one client, awaiting a redirect handler and a callback in the same task.
The hub's flow spans two browser requests (Connect, then the callback, possibly on another web
process), keeps its state in the user's session and its tokens per user in the database, and
refreshes on behalf of many users. So the steps are called one by one here, synchronously (they
run in sync views and in the worker's thread), with the SDK doing the parsing and building.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx2
from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError, PKCEParameters
from mcp.client.auth.oauth2 import OAuthContext, check_registration_usable
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    create_client_registration_request,
    get_client_metadata_scopes,
    validate_authorization_response_iss,
)
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import ValidationError

from apps.connections import auth_probe
from apps.connections.auth_probe import Challenge, probe
from apps.core.outbound import PUBLIC_ONLY, Policy, guarded_client, trusting

TIMEOUT = httpx2.Timeout(15.0)

__all__ = [
    "Challenge",
    "OAuthFlowError",
    "OAuthRegistrationError",
    "OAuthTokenError",
    "UpstreamOAuthError",
    "probe",
]


class UpstreamOAuthError(Exception):
    """A step of the upstream OAuth flow failed; the message is safe to show (never a token)."""


@dataclass(frozen=True)
class ServerAuth:
    """A backend's authorization set-up: its resource metadata and its authorization server's.

    `resource` is None for a backend that is not MCP-authorization-aware (a plain OAuth 2 API
    behind an MCP server taking a bearer header): no RFC 8707 `resource` is sent for it.
    `trusted`: URLs staff entered (a pre-registered app's), reachable whatever the address policy.
    """

    resource: ProtectedResourceMetadata | None
    authorization_server: OAuthMetadata
    scope: str | None
    trusted: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "resource": self.resource.model_dump(mode="json", exclude_none=True)
            if self.resource
            else None,
            "authorization_server": self.authorization_server.model_dump(
                mode="json", exclude_none=True
            ),
            "scope": self.scope,
            "trusted": list(self.trusted),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ServerAuth:
        resource = data.get("resource")
        return cls(
            ProtectedResourceMetadata.model_validate(resource) if resource else None,
            OAuthMetadata.model_validate(data["authorization_server"]),
            data.get("scope"),
            tuple(data.get("trusted") or ()),
        )


@dataclass(frozen=True)
class AuthorizationRequest:
    """Where to send the user, and what the callback needs to finish (kept in their session)."""

    url: str
    state: str
    code_verifier: str


def _client(url: str, *, public_only: bool, trusted: tuple[str, ...] = ()) -> httpx2.Client:
    """A client for the URLs the backend at `url` names (metadata, registration, token, revocation):
    the backend chose them, so they go through the outbound address policy. The backend's own
    origin stays reachable when staff chose it (`public_only` False): an authorization server on the
    backend itself is no new target; so do the origins of `trusted` URLs (staff typed them).
    Redirects are not followed: a metadata or token endpoint that redirects is misconfigured, and
    following one could send client credentials somewhere else."""
    chosen = ([] if public_only else [url]) + list(trusted)
    policy = (
        Policy(trusted=frozenset().union(*(trusting(u).trusted for u in chosen)))
        if chosen
        else PUBLIC_ONLY
    )
    return guarded_client(policy, timeout=TIMEOUT, follow_redirects=False)


def discover(url: str, challenge: Challenge, *, public_only: bool = True) -> ServerAuth:
    """RFC 9728 protected resource metadata, then the RFC 8414 metadata of its first AS.
    `public_only`: the server's URL was chosen by a user who is not staff (see `_client`)."""
    resource = resource_metadata(url, challenge, public_only=public_only)
    if resource is None:
        raise UpstreamOAuthError(
            f"{url} asks for OAuth but publishes no protected resource metadata"
        )
    issuer = str(resource.authorization_servers[0])
    with _client(url, public_only=public_only) as http:
        metadata = _first_valid(
            http,
            build_oauth_authorization_server_metadata_discovery_urls(issuer, url),
            OAuthMetadata,
        )
    if metadata is None:
        raise UpstreamOAuthError(f"the authorization server {issuer} publishes no metadata")
    if "S256" not in (metadata.code_challenge_methods_supported or []):
        raise UpstreamOAuthError(f"the authorization server {issuer} does not support PKCE S256")
    scope = get_client_metadata_scopes(
        challenge.scope, resource, metadata, ["authorization_code", "refresh_token"]
    )
    return ServerAuth(resource, metadata, scope)


def resource_metadata(
    url: str, challenge: Challenge, *, public_only: bool = True
) -> ProtectedResourceMetadata | None:
    """The backend's RFC 9728 protected resource metadata, None if it publishes none."""
    with _client(url, public_only=public_only) as http:
        return _first_valid(
            http,
            build_protected_resource_metadata_discovery_urls(challenge.resource_metadata_url, url),
            ProtectedResourceMetadata,
        )


def app_metadata(
    *,
    metadata_url: str = "",
    authorization_endpoint: str = "",
    token_endpoint: str = "",
    revocation_endpoint: str = "",
) -> OAuthMetadata:
    """A pre-registered app's authorization server: its metadata document (RFC 8414 or OpenID
    Connect discovery, as staff named it), or the endpoints staff typed, the issuer being the
    authorization endpoint's origin (what an RFC 9207 `iss` in the callback is compared to)."""
    if not metadata_url:
        origin = httpx2.URL(authorization_endpoint)
        return OAuthMetadata(
            issuer=f"{origin.scheme}://{origin.netloc.decode()}",
            authorization_endpoint=authorization_endpoint,
            token_endpoint=token_endpoint,
            revocation_endpoint=revocation_endpoint or None,
        )
    with _client(metadata_url, public_only=False) as http:
        try:
            response = http.get(metadata_url, headers={"Accept": "application/json"})
        except httpx2.HTTPError as exc:
            raise UpstreamOAuthError(f"{metadata_url} did not answer: {exc}") from exc
    if response.status_code != 200:
        raise UpstreamOAuthError(f"{metadata_url} answered HTTP {response.status_code}")
    try:
        return OAuthMetadata.model_validate_json(response.content)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'document'}: {e['msg']}" for e in exc.errors()[:3]
        )
        raise UpstreamOAuthError(
            f"{metadata_url} is not authorization server metadata ({problems})"
        ) from exc


def _first_valid(http: httpx2.Client, urls: list[str], model: type[Any]) -> Any:
    for candidate in urls:
        try:
            response = http.get(candidate, headers={"Accept": "application/json"})
        except httpx2.HTTPError:
            continue
        if response.status_code == 200:
            try:
                return model.model_validate_json(response.content)
            except ValidationError:
                continue
    return None


def register(
    url: str, auth: ServerAuth, *, redirect_uri: str, client_name: str, public_only: bool = True
) -> OAuthClientInformationFull:
    """Dynamic client registration (RFC 7591): the hub registers once per backend."""
    if auth.authorization_server.registration_endpoint is None:
        raise UpstreamOAuthError(
            f"the authorization server {auth.authorization_server.issuer} offers no dynamic client "
            "registration: an administrator registers an app there and enters it in the admin "
            "(Upstream OAuth apps)"
        )
    metadata = OAuthClientMetadata(
        redirect_uris=[redirect_uri],
        client_name=client_name,
        scope=auth.scope,
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method=_auth_method(auth.authorization_server),
    )
    request = create_client_registration_request(
        auth.authorization_server, metadata, str(auth.authorization_server.issuer)
    )
    with _client(url, public_only=public_only) as http:
        try:
            response = http.send(request)
        except httpx2.HTTPError as exc:
            raise UpstreamOAuthError(f"client registration failed: {exc}") from exc
    if response.status_code not in (200, 201):
        raise UpstreamOAuthError(f"client registration failed: HTTP {response.status_code}")
    try:
        info = OAuthClientInformationFull.model_validate_json(response.content)
        check_registration_usable(info)
    except (ValidationError, OAuthRegistrationError) as exc:
        raise UpstreamOAuthError(f"client registration failed: {exc}") from exc
    return info


def _auth_method(metadata: OAuthMetadata) -> str:
    # client_secret_post first: revocation endpoints built on the SDK (and some others) read the
    # client's credentials from the form body only, whatever the token endpoint accepts.
    supported = metadata.token_endpoint_auth_methods_supported or ["client_secret_basic"]
    for method in ("client_secret_post", "client_secret_basic", "none"):
        if method in supported:
            return method
    return supported[0]


def _context(url: str, auth: ServerAuth, client: OAuthClientInformationFull) -> OAuthContext:
    context = OAuthContext(
        url,
        OAuthClientMetadata(redirect_uris=client.redirect_uris),
        storage=None,  # type: ignore[arg-type]
        redirect_handler=None,
        callback_handler=None,
    )
    context.protected_resource_metadata, context.oauth_metadata, context.client_info = (
        auth.resource,
        auth.authorization_server,
        client,
    )
    return context


def authorization_request(
    url: str, auth: ServerAuth, client: OAuthClientInformationFull, *, redirect_uri: str, state: str
) -> AuthorizationRequest:
    """The authorization URL (code flow, PKCE S256, RFC 8707 `resource`) and what to keep."""
    pkce = PKCEParameters.generate()
    params = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": pkce.code_challenge,
        "code_challenge_method": "S256",
    }
    if auth.resource is not None:
        params["resource"] = _context(url, auth, client).get_resource_url()
    if auth.scope:
        params["scope"] = auth.scope
    endpoint = str(auth.authorization_server.authorization_endpoint)
    separator = "&" if "?" in endpoint else "?"
    return AuthorizationRequest(
        f"{endpoint}{separator}{urlencode(params)}", state, pkce.code_verifier
    )


def check_issuer(auth: ServerAuth, iss: str | None) -> None:
    """RFC 9207: a callback naming another issuer is a mix-up attack."""
    try:
        validate_authorization_response_iss(iss, auth.authorization_server)
    except OAuthFlowError as exc:
        raise UpstreamOAuthError(str(exc)) from exc


def exchange_code(
    url: str,
    auth: ServerAuth,
    client: OAuthClientInformationFull,
    *,
    code: str,
    code_verifier: str,
    redirect_uri: str,
    public_only: bool = True,
) -> OAuthToken:
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "client_id": client.client_id,
        "code_verifier": code_verifier,
    }
    return _token_request(url, auth, client, data, public_only=public_only)


class GrantRejected(UpstreamOAuthError):
    """The authorization server refused the refresh token (revoked, expired, rotated away)."""


def refresh(
    url: str,
    auth: ServerAuth,
    client: OAuthClientInformationFull,
    *,
    refresh_token: str,
    public_only: bool = True,
) -> OAuthToken:
    data = {
        "grant_type": "refresh_token",
        "refresh_token": refresh_token,
        "client_id": client.client_id,
    }
    return _token_request(url, auth, client, data, public_only=public_only)


def _token_request(
    url: str,
    auth: ServerAuth,
    client: OAuthClientInformationFull,
    data: dict[str, str],
    *,
    public_only: bool,
) -> OAuthToken:
    context = _context(url, auth, client)
    if auth.resource is not None:
        data["resource"] = context.get_resource_url()
    try:
        # Accept: GitHub answers a form-encoded body without it.
        data, headers = context.prepare_token_auth(
            data,
            {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"},
        )
    except OAuthTokenError as exc:
        raise UpstreamOAuthError(str(exc)) from exc
    with _client(url, public_only=public_only, trusted=auth.trusted) as http:
        try:
            response = http.post(
                str(auth.authorization_server.token_endpoint), data=data, headers=headers
            )
        except httpx2.HTTPError as exc:
            raise UpstreamOAuthError(f"the token endpoint did not answer: {exc}") from exc
    if response.status_code in (400, 401):
        raise GrantRejected(f"the authorization server refused: {_oauth_error(response)}")
    if response.status_code != 200:
        raise UpstreamOAuthError(f"the token endpoint answered HTTP {response.status_code}")
    if "error" in _json(response):  # GitHub refuses with 200 and an error body
        raise GrantRejected(f"the authorization server refused: {_oauth_error(response)}")
    try:
        return OAuthToken.model_validate_json(response.content)
    except ValidationError as exc:
        raise UpstreamOAuthError("the token endpoint sent an invalid token response") from exc


def revoke(
    url: str,
    auth: ServerAuth,
    client: OAuthClientInformationFull,
    *,
    token: str,
    hint: str,
    public_only: bool = True,
) -> bool:
    """RFC 7009 revocation, authenticated as at the token endpoint; False if it did not happen."""
    endpoint = auth.authorization_server.revocation_endpoint
    if endpoint is None:
        return False
    data, headers = _context(url, auth, client).prepare_token_auth(
        {"token": token, "token_type_hint": hint, "client_id": client.client_id},
        {"Content-Type": "application/x-www-form-urlencoded"},
    )
    with _client(url, public_only=public_only, trusted=auth.trusted) as http:
        try:
            return http.post(str(endpoint), data=data, headers=headers).status_code == 200
        except httpx2.HTTPError:
            return False


def _json(response: httpx2.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _oauth_error(response: httpx2.Response) -> str:
    body = _json(response)
    if not body:
        return f"HTTP {response.status_code}"
    error = str(body.get("error", f"HTTP {response.status_code}"))[:100]
    description = str(body.get("error_description", ""))[:200]
    return f"{error} ({description})" if description else error


def token_refused(url: str, headers: dict[str, str], *, public_only: bool = True) -> bool:
    """Whether the backend answers an `initialize` carrying these headers (a user's token) with
    401: an MCP-authorization-aware backend with its Bearer challenge, a plain API with its own."""
    response = auth_probe.answer_to_initialize(url, headers, public_only=public_only)
    return response is not None and response.status_code == 401
