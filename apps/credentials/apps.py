from django.apps import AppConfig


class CredentialsConfig(AppConfig):
    name = "apps.credentials"
    default_auto_field = "django.db.models.BigAutoField"
