"""Every user gets a default endpoint, whoever created them (admin, createsuperuser, a command).

A receiver rather than a call in accounts: toolsets depends on accounts, not the reverse.
"""

from django.conf import settings
from django.db.models.signals import post_save
from django.dispatch import receiver

from apps.catalog.signals import catalog_changed
from apps.credentials.signals import credentials_changed


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="toolsets.default_endpoint")
def create_default_endpoint(sender, instance, created: bool, raw: bool = False, **kwargs) -> None:
    if created and not raw:
        from apps.toolsets.services import ensure_default_endpoint

        ensure_default_endpoint(user=instance)


@receiver(catalog_changed, dispatch_uid="toolsets.catalog_changed")
def announce_catalog_change(sender, server_ids: list[int], **kwargs) -> None:
    """A server's config or tools changed: endpoints using it must re-list (and drop stale views)."""
    from apps.toolsets.events import announce_tools_changed
    from apps.toolsets.models import EndpointTool

    endpoint_ids = EndpointTool.objects.filter(tool__server_id__in=server_ids).values_list(
        "endpoint_id", flat=True
    )
    announce_tools_changed(set(endpoint_ids))


@receiver(credentials_changed, dispatch_uid="toolsets.credentials_changed")
def announce_credentials_change(sender, user_id: int, server_id: int, **kwargs) -> None:
    """A user's values for a server changed: their endpoints rebuild their views (with the new spec)."""
    from apps.toolsets.events import announce_tools_changed
    from apps.toolsets.models import Endpoint

    announce_tools_changed(
        set(Endpoint.objects.filter(owner_id=user_id).values_list("pk", flat=True))
    )
