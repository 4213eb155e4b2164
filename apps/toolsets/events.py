"""Tell open MCP sessions that an endpoint's tool list changed (they send `tools/list_changed`).

Published after commit on the channel layer group of the endpoint, so any web process holding a
session of that endpoint hears it.
"""

from __future__ import annotations

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from apps.core import hotstate

TOOLS_CHANGED = "endpoint.tools_changed"


def endpoint_group(endpoint_id: int) -> str:
    return f"mcphub.endpoint.{endpoint_id}"


def endpoint_version_key(endpoint_id: int) -> str:
    """A counter bumped on every change: web processes rebuild their cached view when it moves."""
    return f"mcphub:ev:{endpoint_id}"


def announce_tools_changed(endpoint_ids: list[int] | set[int]) -> None:
    ids = sorted(set(endpoint_ids))
    if ids:
        transaction.on_commit(lambda: _publish(ids))


def _publish(endpoint_ids: list[int]) -> None:
    layer = get_channel_layer()
    for endpoint_id in endpoint_ids:
        hotstate.incr(endpoint_version_key(endpoint_id))
        group = endpoint_group(endpoint_id)
        async_to_sync(layer.group_send)(group, {"type": TOOLS_CHANGED, "group": group, "endpoint": endpoint_id})
