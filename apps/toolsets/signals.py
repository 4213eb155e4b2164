"""Every user gets a default endpoint, whoever created them (admin, createsuperuser, a command).

A receiver rather than a call in accounts: toolsets depends on accounts, not the reverse.
"""

from django.conf import settings
from django.db.models.signals import post_save
from django.dispatch import receiver


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="toolsets.default_endpoint")
def create_default_endpoint(sender, instance, created: bool, raw: bool = False, **kwargs) -> None:
    if created and not raw:
        from apps.toolsets.services import ensure_default_endpoint

        ensure_default_endpoint(user=instance)
