from django.apps import AppConfig


class CredentialsConfig(AppConfig):
    name = "apps.credentials"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.audit.registry import register
        from apps.catalog import operations
        from apps.credentials.models import UserCredential
        from apps.credentials.selectors import register_user_header_provider, spec_for_operation
        from apps.credentials.upstream.services import authorization_headers

        # Discovery and health checks of a server with user variables use a user's own values.
        operations.set_spec_resolver(spec_for_operation)
        # A server requiring OAuth: each user's calls carry their own token (upstream OAuth).
        register_user_header_provider(authorization_headers)
        register(UserCredential, secret_fields=["values"])
        from apps.credentials.upstream.models import UpstreamOAuthClient, UpstreamOAuthGrant

        register(UpstreamOAuthClient, secret_fields=["client_info"])
        register(
            UpstreamOAuthGrant, ignore_fields=["tokens", "expires_at", "lifetime", "refreshed_at"]
        )
        from apps.credentials.upstream import admin  # noqa: F401 - registers the upstream OAuth admin pages
