"""`catalog_changed`: sent after a server's connection config or catalog changed.

Receivers only flush caches and notify (toolsets tells the affected endpoints' MCP sessions);
the catalog itself does not know who listens, keeping dependencies pointing one way.
"""

from django.db.models.signals import post_delete, post_save
from django.dispatch import Signal, receiver

catalog_changed = Signal()  # kwargs: server_ids: list[int]


@receiver(post_save, sender="catalog.McpServer", dispatch_uid="catalog.server_saved")
@receiver(post_delete, sender="catalog.McpServer", dispatch_uid="catalog.server_deleted")
def _server_changed(sender, instance, raw: bool = False, **kwargs) -> None:
    if not raw:
        catalog_changed.send(sender=sender, server_ids=[instance.pk])
