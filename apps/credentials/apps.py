from django.apps import AppConfig


class CredentialsConfig(AppConfig):
    name = "apps.credentials"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.audit.registry import register
        from apps.catalog import operations
        from apps.credentials.models import UserCredential
        from apps.credentials.selectors import spec_for_operation

        # Discovery and health checks of a server with user variables use a user's own values.
        operations.set_spec_resolver(spec_for_operation)
        register(UserCredential, secret_fields=["values"])
