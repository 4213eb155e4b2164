"""Celery tasks for the catalog: thin wrappers over `operations`, ids (or names) as arguments, and
the calls that queue them once the current transaction commits (`request_*`, `discover_if_due`).

The names are stable (beat schedules and queued messages refer to them); CELERY_TASK_ROUTES
sends `catalog.*` to the `mcp` queue, served by the workers that hold the connection pool.
A server deleted or disabled before its task runs is skipped quietly.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from celery import shared_task
from django.core.cache import cache
from django.db import transaction

from apps.catalog import operations
from apps.catalog.models import BUILTIN_NAMES, McpServer

logger = logging.getLogger(__name__)

# Backends announce list changes in bursts (one per tool they add); one discovery covers a burst.
REDISCOVERY_DEBOUNCE_SECONDS = 1.0
_REDISCOVERY_KEY = "mcphub:catalog:rediscover:{name}"


@shared_task(name="catalog.discover_server", ignore_result=True)
def discover_server(server_id: int, user_id: int | None = None) -> None:
    server = McpServer.objects.filter(pk=server_id, enabled=True).first()
    if server is None:
        return
    outcome = operations.discover_now(server=server, user=_user(user_id))
    (logger.info if outcome.ok else logger.warning)("%s", outcome)


@shared_task(name="catalog.discover_servers", ignore_result=True)
def discover_servers(server_ids: list[int], user_id: int | None = None) -> None:
    """Several servers at once (concurrently): what an import or a save just created or changed;
    `user_id` is who did it (a server with user variables is discovered with their values)."""
    servers = list(McpServer.objects.filter(pk__in=server_ids, enabled=True))
    for outcome in operations.discover_many(servers=servers, user=_user(user_id)):
        (logger.info if outcome.ok else logger.warning)("%s", outcome)


def _user(user_id: int | None):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.filter(pk=user_id, is_active=True).first() if user_id else None


@shared_task(name="catalog.discover_all", ignore_result=True)
def discover_all() -> None:
    for server_id in (
        McpServer.objects.filter(enabled=True)
        .exclude(name__in=BUILTIN_NAMES)
        .values_list("pk", flat=True)
    ):
        discover_server.delay(server_id)


@shared_task(name="catalog.check_health", ignore_result=True)
def check_health(server_id: int) -> None:
    server = McpServer.objects.filter(pk=server_id, enabled=True).first()
    if server is None:
        return
    before = server.status
    verdict = operations.check_health(server=server)
    # A quiet log: a change of health is news, the same verdict every minute is not.
    if verdict.status != before:
        (logger.info if verdict.status == McpServer.Status.HEALTHY else logger.warning)(
            "health: %s (was %s)", verdict, before
        )


@shared_task(name="catalog.check_health_all", ignore_result=True)
def check_health_all() -> None:
    """Check every enabled server; also close any connection a disabled server still holds."""
    for server_id in (
        McpServer.objects.filter(enabled=True)
        .exclude(name__in=BUILTIN_NAMES)
        .values_list("pk", flat=True)
    ):
        check_health.delay(server_id)
    disabled = McpServer.objects.filter(enabled=False).values_list("name", flat=True)
    if closed := operations.close_disabled(server_names=disabled):
        logger.info("closed the connections of disabled servers: %s", ", ".join(closed))


@shared_task(name="catalog.close_server", ignore_result=True)
def close_server(server_name: str) -> None:
    # By name: a deleted server has no row left to look up, and its backend must stop too.
    operations.close_connection(server_name=server_name)


# --- Queueing them (after the current transaction commits) -----------------------------------


def request_discovery(*, server_ids: Iterable[int], user_id: int | None = None) -> None:
    """Discover these servers (all at once) in the background, once the current transaction commits.

    Embedded, tasks run in-process: the save that asked waits for the outcome, so it can show it.
    """
    ids = list(server_ids)
    if ids:
        transaction.on_commit(lambda: discover_servers.delay(ids, user_id))


def discover_if_due(*, servers: Iterable[McpServer], user: Any = None) -> None:
    """After saving servers: discover those new, re-enabled or connecting differently (after commit).

    The admin, the API and imports call this, so a server added anywhere shows its tools (or why
    it has none) without waiting for the periodic re-discovery.
    """
    user_id = user.pk if user is not None and user.is_authenticated else None
    request_discovery(
        server_ids=[s.pk for s in servers if getattr(s, "discovery_due", False)], user_id=user_id
    )


def request_rediscovery(*, server_name: str) -> bool:
    """A backend said its lists changed: discover it soon, once per burst. False if coalesced."""
    if not cache.add(
        _REDISCOVERY_KEY.format(name=server_name), 1, timeout=REDISCOVERY_DEBOUNCE_SECONDS
    ):
        return False
    server_id = (
        McpServer.objects.filter(name=server_name, enabled=True)
        .values_list("pk", flat=True)
        .first()
    )
    if server_id is None:
        return False
    discover_server.apply_async((server_id,), countdown=REDISCOVERY_DEBOUNCE_SECONDS)
    return True


def request_close(*, server_name: str) -> None:
    """Close the server's connection in the background, once the current transaction commits."""
    transaction.on_commit(lambda: close_server.delay(server_name))
