from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "apps.catalog"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.catalog import (
            signals,  # noqa: F401 - connects the change notifications
            watch,
        )

        watch.connect()  # closes disabled servers' connections; list_changed listener in workers
        from apps.connections.transports import guard
        from apps.core.outbound import PUBLIC_ONLY

        guard.install(
            PUBLIC_ONLY
        )  # the pool reaches servers users added only through the outbound policy
        from apps.audit.registry import register
        from apps.catalog.models import McpServer

        register(
            McpServer,
            secret_fields=["env", "headers"],
            ignore_fields=[
                "status",
                "last_error",
                "last_ok_at",
                "last_checked_at",
                "config_hash",
                "oauth",
            ],
        )
