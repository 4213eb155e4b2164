from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "apps.chat"
    default_auto_field = "django.db.models.BigAutoField"

    def import_models(self) -> None:
        super().import_models()
        # Autonomous runs keep their models with them (apps/chat/runs/); they are the chat app's.
        from apps.chat.runs import models  # noqa: F401

    def ready(self) -> None:
        # The hub answers what a backend asks back during any tool call its caller cannot answer.
        from apps.chat import host
        from apps.toolsets import calls

        calls.register_host(host.relay)
