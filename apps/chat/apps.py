from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "apps.chat"
    default_auto_field = "django.db.models.BigAutoField"

    def import_models(self) -> None:
        super().import_models()
        # Autonomous runs keep their models with them (apps/chat/runs/); they are the chat app's.
        from apps.chat.runs import models  # noqa: F401
