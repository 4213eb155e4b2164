from django.apps import AppConfig
from django.conf import settings

from apps.connections.health import check_workers


class ConnectionsConfig(AppConfig):
    """The MCP client connection pool: a library layer without models."""

    name = "apps.connections"
    default_auto_field = "django.db.models.BigAutoField"
    # Read by core's health view (the pool imports no app). Without Redis the pool runs inside
    # the web process: there are no workers to count.
    health_checks = {"workers": (check_workers, lambda: bool(settings.REDIS_URL))}
