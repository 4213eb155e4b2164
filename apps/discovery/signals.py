"""A dynamic endpoint searches every tool its owner may see, not only the enabled ones: any
catalog change, or a change of the teams that decide what its owner sees, moves its version so
web processes rebuild its catalog (and its sessions re-list)."""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from apps.catalog.signals import catalog_changed


def _announce(**filters) -> None:
    from apps.toolsets.events import announce_tools_changed
    from apps.toolsets.models import Endpoint

    announce_tools_changed(
        set(
            Endpoint.objects.filter(mode=Endpoint.Mode.DYNAMIC, **filters).values_list(
                "pk", flat=True
            )
        )
    )


@receiver(catalog_changed, dispatch_uid="discovery.catalog_changed")
def catalog_change(sender, server_ids: list[int], **kwargs) -> None:
    _announce()


@receiver(post_save, sender="accounts.Membership", dispatch_uid="discovery.membership_saved")
@receiver(post_delete, sender="accounts.Membership", dispatch_uid="discovery.membership_deleted")
def membership_change(sender, instance, raw: bool = False, **kwargs) -> None:
    if not raw:
        _announce(owner_id=instance.user_id)
