from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "apps.catalog"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.catalog import signals  # noqa: F401 - connects the change notifications
        from apps.catalog import watch

        watch.connect()  # closes disabled servers' connections; list_changed listener in workers
