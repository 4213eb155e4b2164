"""Keeping the pool and the catalog in step with the world, without restarts.

- A backend announces `*/list_changed`: its server is re-discovered (debounced). In production the
  pool workers publish backend notifications on a Redis channel and every Celery worker process
  listens (`EventsListener`); in the embedded default the in-process pool calls
  `on_backend_notification`. A shared cache key coalesces duplicates from several listeners.
- A server is disabled or deleted (admin, API, import): its connection is closed after commit.
- `MCP_JSON_PATH` with `MCPHUB_WATCH_MCP_JSON=true`: a changed file is re-imported
  (`reimport_if_changed`, beat's task `catalog.watch_mcp_json`); a bad file logs every problem and
  changes nothing.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async
from celery import shared_task
from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, close_old_connections
from django.db.models.signals import post_delete, post_save

from apps.catalog import tasks
from apps.catalog.importing import ServerChange, import_servers
from apps.catalog.mcp_json import McpJsonError, read_mcp_json
from apps.catalog.models import McpServer
from apps.core.hotstate import OUTAGE_ERRORS

logger = logging.getLogger(__name__)

LIST_CHANGED = frozenset(
    {
        "notifications/tools/list_changed",
        "notifications/resources/list_changed",
        "notifications/prompts/list_changed",
    }
)
_MCP_JSON_KEY = "mcphub:catalog:mcp-json:{path}"


# --- Backend notifications -------------------------------------------------------------------


async def on_backend_notification(server: str, notification: Any) -> None:
    """Hook for an in-process `Pool(on_notification=...)`: list_changed → re-discover the server.

    Returns at once: the pool awaits its hooks on the session's reader, and a discovery awaited
    here would wait for replies that reader has yet to read.
    """
    if _method(notification) in LIST_CHANGED:
        # A fresh context: the reader's may point at an asgiref executor of a call long finished.
        task = asyncio.get_running_loop().create_task(
            _rediscover_later(server), context=contextvars.Context()
        )
        _background.add(task)
        task.add_done_callback(_background.discard)


_background: set[asyncio.Task[None]] = set()


async def _rediscover_later(server: str) -> None:
    # Eager Celery ignores countdowns: wait out the burst here instead.
    await asyncio.sleep(tasks.REDISCOVERY_DEBOUNCE_SECONDS)
    try:
        await sync_to_async(tasks.request_rediscovery)(server_name=server)
    except Exception:  # boundary: a failed re-discovery must not break the pool's loop
        logger.exception("re-discovery of %r after list_changed failed", server)


def _method(notification: Any) -> str:
    if isinstance(notification, dict):
        return notification.get("method", "")
    return getattr(notification, "method", "")


class EventsListener:
    """A thread in a Celery worker process: backend notifications from the pool workers' Redis
    channel → `request_rediscovery` for list_changed."""

    def __init__(self, redis_url: str, prefix: str) -> None:
        self.redis_url = redis_url
        self.prefix = prefix
        self._stop = threading.Event()
        self._subscribed = threading.Event()
        self._lost_at: float | None = None  # when Redis went away (monotonic)
        self._thread = threading.Thread(target=self._run, name="mcp-catalog-events", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._subscribed.wait(10)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._listen()
            except OUTAGE_ERRORS as exc:  # Redis restarts: one line per outage, one when back
                if self._lost_at is None:
                    self._lost_at = time.monotonic()
                    logger.warning("catalog events listener lost Redis (%s); reconnecting", exc)
                self._stop.wait(0.5)
            except Exception:  # boundary: whatever else happens, keep listening
                logger.warning("catalog events listener failed; reconnecting", exc_info=True)
                self._stop.wait(1.0)

    def _listen(self) -> None:
        import redis

        from apps.connections.worker import events_channel

        client = redis.Redis.from_url(self.redis_url, socket_timeout=None, socket_connect_timeout=5)
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        try:
            pubsub.subscribe(events_channel(self.prefix))
            self._subscribed.set()
            if self._lost_at is not None:
                logger.warning(
                    "catalog events listener has Redis back after %.1f s",
                    time.monotonic() - self._lost_at,
                )
                self._lost_at = None
            while not self._stop.is_set():
                message = pubsub.get_message(timeout=1.0)
                if message is not None:
                    self.handle(message["data"])
        finally:
            pubsub.close()
            client.close()

    def handle(self, raw: bytes | str) -> None:
        data = json.loads(raw)
        if _method(data.get("n") or {}) not in LIST_CHANGED:
            return
        try:
            tasks.request_rediscovery(server_name=data["s"])
        finally:
            close_old_connections()


_listener: EventsListener | None = None


def start_events_listener(**_: Any) -> None:
    global _listener
    from apps.connections.default import pool_settings
    from apps.connections.worker import DEFAULT_PREFIX

    redis_url, options = pool_settings()
    if not redis_url or _listener is not None:
        return  # embedded: the in-process pool's hook does this
    _listener = EventsListener(redis_url, options.get("redis_prefix", DEFAULT_PREFIX))
    _listener.start()


def stop_events_listener(**_: Any) -> None:
    global _listener
    if _listener is not None:
        _listener.stop()
        _listener = None


# --- Server rows -----------------------------------------------------------------------------


def _server_saved(
    sender: type, instance: McpServer, created: bool = False, raw: bool = False, **kwargs: Any
) -> None:
    if not (raw or created or instance.enabled):  # a server just created has no connection yet
        tasks.request_close(server_name=instance.name)


def _server_deleted(sender: type, instance: McpServer, **kwargs: Any) -> None:
    tasks.request_close(server_name=instance.name)


def connect() -> None:
    """Called from the catalog's AppConfig.ready()."""
    from celery import signals

    post_save.connect(_server_saved, sender=McpServer, dispatch_uid="catalog.close_disabled")
    post_delete.connect(_server_deleted, sender=McpServer, dispatch_uid="catalog.close_deleted")
    signals.worker_ready.connect(start_events_listener, weak=False, dispatch_uid="catalog.events")
    signals.worker_shutdown.connect(stop_events_listener, weak=False, dispatch_uid="catalog.events")


# --- A watched .mcp.json ---------------------------------------------------------------------


@shared_task(name="catalog.watch_mcp_json", ignore_result=True)
def watch_mcp_json() -> None:
    """Beat's look at MCP_JSON_PATH. Defined here, not in tasks.py (which this module imports): an
    import queues the discovery of what it changed through tasks.py."""
    if settings.MCPHUB_WATCH_MCP_JSON and settings.MCP_JSON_PATH:
        reimport_if_changed(path=settings.MCP_JSON_PATH)


def reimport_if_changed(*, path: str | Path) -> list[ServerChange] | None:
    """Import the file again if its content changed since the last look; None if unchanged.

    A file that cannot be read or parsed, or that an import refuses, logs every problem and
    changes nothing; the same content is not retried until it changes again.
    """
    path = Path(path).expanduser()
    digest = _digest(path)
    key = _MCP_JSON_KEY.format(path=path)
    if digest is None or cache.get(key) == digest:
        return None
    cache.set(key, digest, timeout=None)
    try:
        changes = import_servers(configs=read_mcp_json(path).servers)
    except McpJsonError as exc:
        logger.error(
            "%s changed but was not imported; nothing changed:\n  %s", path, "\n  ".join(exc.errors)
        )
        return None
    except IntegrityError as exc:
        cache.delete(key)  # a concurrent writer got in the way: try again next time
        logger.error(
            "%s changed but was not imported (a concurrent change got in the way): %s", path, exc
        )
        return None
    _after_import(path, changes)
    return changes


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        logger.warning("cannot read the watched MCP config %s: %s", path, exc)
        return None


def _after_import(path: Path, changes: list[ServerChange]) -> None:
    # The import itself has the servers it changed discovered.
    for change in changes:
        if change.action != "unchanged":
            logger.info("%s: %s", path, change)
