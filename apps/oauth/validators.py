"""django-oauth-toolkit's validator, plus the hub's two additions: loopback CIMD clients in
development, and the connected-app record made when tokens are issued."""

from __future__ import annotations

from oauth2_provider.oauth2_validators import OAuth2Validator

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
        services.record_connection(application=request.client, user=request.user, resource=request.resource or [])
