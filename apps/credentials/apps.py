from django.apps import AppConfig


class CredentialsConfig(AppConfig):
    name = "apps.credentials"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.audit.registry import register
        from apps.credentials.models import UserCredential

        register(UserCredential, secret_fields=["values"])
        from apps.credentials.upstream.models import (
            UpstreamOAuthApp,
            UpstreamOAuthClient,
            UpstreamOAuthGrant,
        )

        register(UpstreamOAuthApp, secret_fields=["client_secret"])
        register(UpstreamOAuthClient, secret_fields=["client_info"])
        register(
            UpstreamOAuthGrant, ignore_fields=["tokens", "expires_at", "lifetime", "refreshed_at"]
        )
        from apps.credentials.upstream import admin  # noqa: F401 - registers the upstream OAuth admin pages
