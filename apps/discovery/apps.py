from django.apps import AppConfig


class DiscoveryConfig(AppConfig):
    name = "apps.discovery"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings

        from apps.audit.registry import register
        from apps.discovery import (
            embeddings,
            signals,  # noqa: F401 - dynamic endpoints hear catalog changes
        )
        from apps.discovery.models import ActivationPattern

        register(ActivationPattern)
        # Searches encode in encoder processes, off the web process's interpreter lock.
        embeddings.PROCESSES = settings.MCPHUB_ENCODER_PROCESSES
