"""Tell open MCP sessions that an endpoint's tool list changed (they send `tools/list_changed`).

Published after commit on the channel layer group of the endpoint, so any web process holding a
session of that endpoint hears it. In the embedded default the channel layer is this process's
memory: a change committed by a shell reaches the web process through the endpoint's version
counter in the database instead, which `announce_changes_of_other_processes` watches.
"""

from __future__ import annotations

import asyncio
import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from apps.core import hotstate

logger = logging.getLogger(__name__)

VERSION_PREFIX = "mcphub:ev:"
WATCH_SECONDS = 0.5

TOOLS_CHANGED = "endpoint.tools_changed"


def endpoint_group(endpoint_id: int) -> str:
    return f"mcphub.endpoint.{endpoint_id}"


def endpoint_version_key(endpoint_id: int) -> str:
    """A counter bumped on every change: web processes rebuild their cached view when it moves."""
    return f"{VERSION_PREFIX}{endpoint_id}"


def announce_tools_changed(endpoint_ids: list[int] | set[int]) -> None:
    ids = sorted(set(endpoint_ids))
    if ids:
        transaction.on_commit(lambda: _publish(ids))


# Versions this process has announced, so the watcher does not announce its own changes twice.
_announced: dict[int, int] = {}


def _publish(endpoint_ids: list[int]) -> None:
    layer = get_channel_layer()
    for endpoint_id in endpoint_ids:
        version = hotstate.incr(endpoint_version_key(endpoint_id))
        _announced[endpoint_id] = max(version, _announced.get(endpoint_id, 0))
        async_to_sync(layer.group_send)(*_event(endpoint_id))


def _event(endpoint_id: int) -> tuple[str, dict]:
    group = endpoint_group(endpoint_id)
    return group, {"type": TOOLS_CHANGED, "group": group, "endpoint": endpoint_id}


async def announce_changes_of_other_processes() -> None:
    """Embedded default, in the web process: announce endpoint versions another process bumped.

    A read of the counters every WATCH_SECONDS (microseconds on SQLite); runs until cancelled.
    """
    layer = get_channel_layer()
    for key, version in (await hotstate.read_counters(prefix=VERSION_PREFIX)).items():
        _announced.setdefault(int(key.removeprefix(VERSION_PREFIX)), version)  # the past is no news
    while True:
        await asyncio.sleep(WATCH_SECONDS)
        try:
            versions = await hotstate.read_counters(prefix=VERSION_PREFIX)
        except Exception:  # noqa: BLE001 - a missed look is retried at the next one
            logger.warning("could not read the endpoint versions", exc_info=True)
            continue
        for key, version in versions.items():
            endpoint_id = int(key.removeprefix(VERSION_PREFIX))
            if version > _announced.get(endpoint_id, 0):
                _announced[endpoint_id] = version
                await layer.group_send(*_event(endpoint_id))
