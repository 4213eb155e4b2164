from django.apps import AppConfig


class ToolsetsConfig(AppConfig):
    name = "apps.toolsets"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.toolsets import signals  # noqa: F401 - connects the default-endpoint receiver
