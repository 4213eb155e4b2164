from django.apps import AppConfig


class AuditConfig(AppConfig):
    """The audit trail (django-auditlog underneath); apps register their models through
    `apps.audit.registry.register` in their own `ready()`."""

    name = "apps.audit"
    verbose_name = "Audit trail"
    default_auto_field = "django.db.models.BigAutoField"
