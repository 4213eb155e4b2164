"""`Authorization: Bearer <token>` with the hub's access tokens, for scripts and MCP clients."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from apps.accounts.models import AccessToken, User
from apps.accounts.services import authenticate_token


class HubTokenAuthentication(authentication.BaseAuthentication):
    """Authenticates a request by a hub access token; `request.auth` is the AccessToken row.

    A request without a Bearer header falls through to the next class (session); a Bearer header
    with a wrong, revoked or expired token is refused outright, never silently anonymous. The
    token's scope is enforced here, once for every view: an MCP token is no REST credential at
    all, and a read-only API token may only read.
    """

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[User, AccessToken] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                "Send the token as 'Authorization: Bearer <token>'."
            )
        token = authenticate_token(header[1].decode("latin-1"))
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked token.")
        _check_scope(token, request)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="mcphub"'


def _check_scope(token: AccessToken, request: Request) -> None:
    refusal = token.api_refusal(write=request.method not in permissions.SAFE_METHODS)
    if refusal is not None:
        raise exceptions.PermissionDenied(refusal)


class HubTokenScheme(OpenApiAuthenticationExtension):
    target_class = HubTokenAuthentication
    name = "hubToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "A hub access token (mcphub_…)."}
