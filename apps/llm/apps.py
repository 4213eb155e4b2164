from django.apps import AppConfig


class LlmConfig(AppConfig):
    name = "apps.llm"
    verbose_name = "LLM providers"
    default_auto_field = "django.db.models.BigAutoField"
