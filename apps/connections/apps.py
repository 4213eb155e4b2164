from django.apps import AppConfig


class ConnectionsConfig(AppConfig):
    """The MCP client connection pool: a library layer without models."""

    name = "apps.connections"
    default_auto_field = "django.db.models.BigAutoField"
