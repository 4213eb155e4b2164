from django.apps import AppConfig


class OAuthConfig(AppConfig):
    name = "apps.oauth"
    label = "oauth"
    verbose_name = "OAuth for MCP endpoints"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.audit.registry import register
        from apps.oauth import signals
        from apps.oauth.models import ConnectedApp

        signals.connect()
        register(
            ConnectedApp, ignore_fields=["last_used_at"]
        )  # who allowed which app, and revoked it
