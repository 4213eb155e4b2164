from django.apps import AppConfig


class ToolsetsConfig(AppConfig):
    name = "apps.toolsets"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.audit.registry import register
        from apps.toolsets import signals  # noqa: F401 - connects the default-endpoint receiver
        from apps.toolsets.models import Endpoint, EndpointTool, Preset, PresetVersion

        for model in (Endpoint, EndpointTool, Preset, PresetVersion):
            register(model)
