from django.apps import AppConfig


class DiscoveryConfig(AppConfig):
    name = "apps.discovery"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.audit.registry import register
        from apps.discovery import signals  # noqa: F401 - dynamic endpoints hear catalog changes
        from apps.discovery.models import ActivationPattern

        register(ActivationPattern)
