from django.apps import AppConfig


class OAuthConfig(AppConfig):
    name = "apps.oauth"
    label = "oauth"
    verbose_name = "OAuth for MCP endpoints"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.oauth import signals

        signals.connect()
