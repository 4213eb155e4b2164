"""allauth's OpenID Connect provider with a nonce in every request and ID tokens always checked.

allauth (65.x) sends no nonce and, for an ID token received from the token endpoint, skips the
signature check (which OpenID Connect allows over TLS); the hub wants both, so a token altered
anywhere — or replayed into another sign-in — is refused.
"""

from __future__ import annotations

import secrets

import jwt
from allauth.socialaccount.internal import jwtkit
from allauth.socialaccount.models import SocialApp
from allauth.socialaccount.providers.oauth2.client import OAuth2Error
from allauth.socialaccount.providers.openid_connect.provider import OpenIDConnectProvider
from allauth.socialaccount.providers.openid_connect.views import OpenIDConnectOAuth2Adapter

# Symmetric algorithms would make the client secret a signing key anyone holding it could use.
ASYMMETRIC = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)


class HubOidcAdapter(OpenIDConnectOAuth2Adapter):
    @property
    def openid_config(self) -> dict:
        config = super().openid_config
        # OpenID Connect Discovery §4.3: the document must name the issuer it was fetched for.
        expected = self.get_provider().app.settings["server_url"].rstrip("/")
        if str(config.get("issuer", "")).rstrip("/") != expected:
            raise OAuth2Error(
                f"The discovery document names the issuer {config.get('issuer')!r}, not {expected!r}."
            )
        return config

    def _decode_id_token(self, app: SocialApp, id_token: str) -> dict:
        claims = verify_jwt(
            id_token,
            config=self.openid_config,
            audience=app.client_id,
            required=("iss", "aud", "exp", "iat", "sub"),
        )
        check_azp(claims, app.client_id)
        return claims

    def complete_login(self, request, app, token, **kwargs):
        login = super().complete_login(request, app, token, **kwargs)
        # Kept (encrypted, in the session) as the id_token_hint of a sign-out at the provider.
        login.raw_id_token = kwargs["response"].get("id_token") or ""
        return login


class HubOidcProvider(OpenIDConnectProvider):
    def get_oauth2_adapter(self, request):
        return HubOidcAdapter(request, self.app.provider_id)

    def redirect(self, request, process, next_url=None, data=None, **kwargs):
        # The nonce rides in the stashed state; the adapter compares it (adapter.py).
        nonce = secrets.token_urlsafe(32)
        auth_params = kwargs.pop("auth_params", None) or self.get_auth_params()
        auth_params = {**auth_params, "nonce": nonce}
        return super().redirect(
            request, process, next_url, data, auth_params=auth_params, nonce=nonce, **kwargs
        )


def check_azp(claims: dict, client_id: str) -> None:
    """OpenID Connect Core 3.1.3.7: an ID token for several audiences must name the party it was
    issued to (`azp`), and that must be the hub; any `azp` present must be the hub's client id."""
    audience = claims.get("aud")
    several = isinstance(audience, list) and len(audience) > 1
    azp = claims.get("azp")
    if (several and azp is None) or (azp is not None and azp != client_id):
        raise OAuth2Error("The ID token was issued to another party (azp).")


def verify_jwt(token: str, *, config: dict, audience: str, required: tuple[str, ...]) -> dict:
    """The claims of a JWT the provider signed with one of its published keys, its issuer and
    audience checked; OAuth2Error (allauth's refusal) for anything else."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as e:
        raise OAuth2Error("Invalid id_token") from e
    alg = header.get("alg")
    if alg not in ASYMMETRIC:
        raise OAuth2Error(
            f"ID token signed with {alg!r}; the hub accepts public-key signatures only."
        )
    try:
        _, key = jwtkit.fetch_key(token, config["jwks_uri"], jwtkit.lookup_kid_jwk)
        return jwt.decode(
            token,
            key=key,
            algorithms=[alg],
            issuer=config["issuer"],
            audience=audience,
            options={"require": list(required)},
            leeway=60,
        )
    except (jwt.PyJWTError, KeyError) as e:
        raise OAuth2Error("Invalid id_token") from e
