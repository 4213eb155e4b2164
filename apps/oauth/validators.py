"""django-oauth-toolkit's validator, plus the hub's additions: loopback CIMD clients in
development, the connected-app record made when tokens are issued, and a replayed authorization
code revoking the tokens it was exchanged for (RFC 6749 §4.1.2)."""

from __future__ import annotations

from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749 import errors

from apps.oauth import cimd, services


class HubOAuth2Validator(OAuth2Validator):
    def _load_application(self, client_id, request):
        client = super()._load_application(client_id, request)
        if client is None and cimd.loopback_http_allowed(client_id):
            client = cimd.resolve_loopback(client_id)
            if client is not None:
                request.client = client
        return client

    def _save_bearer_token(self, token, request, *args, **kwargs):
        super()._save_bearer_token(token, request, *args, **kwargs)
        services.record_connection(
            application=request.client, user=request.user, resource=request.resource or []
        )
        if request.grant_type == "authorization_code":
            services.record_redeemed_code(
                code=request.code, refresh_token=token.get("refresh_token")
            )

    def validate_code(self, client_id, code, client, request, *args, **kwargs):
        if super().validate_code(client_id, code, client, request, *args, **kwargs):
            return True
        services.revoke_redeemed_code(code=code)  # a replay, if it was exchanged before
        return False

    def invalidate_authorization_code(self, client_id, code, request, *args, **kwargs):
        try:
            super().invalidate_authorization_code(client_id, code, request, *args, **kwargs)
        except errors.InvalidGrantError:
            # Another exchange of this code won the race: both sets of tokens are revoked.
            services.revoke_redeemed_code(code=code)
            raise
