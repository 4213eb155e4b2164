from django.apps import AppConfig


class ConnectionsConfig(AppConfig):
    """The MCP client connection pool: a library layer without models."""

    name = "apps.connections"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings

        from apps.connections.health import check_workers
        from apps.core.views import register_check

        # Without Redis the pool runs inside the web process: there are no workers to count.
        register_check("workers", check_workers, when=lambda: bool(settings.REDIS_URL))
