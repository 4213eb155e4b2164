"""Hub-wide health: JSON, 200 when every dependency answers, 503 naming those that do not."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET


class Unhealthy(Exception):
    """A check that ran and found something wrong (as opposed to one that could not run)."""


def _check_database() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return {}


def _redis():
    import redis

    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


def _check_redis() -> dict:
    client = _redis()
    try:
        client.ping()
    finally:
        client.close()
    return {}


def _check_workers() -> dict:
    """With Redis, tool calls need a pool worker: count those whose heartbeat is fresh."""
    from apps.connections.default import pool_settings
    from apps.connections.worker import DEFAULT_PREFIX, WORKER_TTL_SECONDS, workers_key

    prefix = pool_settings()[1].get("redis_prefix", DEFAULT_PREFIX)
    client = _redis()
    try:
        live = client.zcount(workers_key(prefix), time.time() - WORKER_TTL_SECONDS, "+inf")
    finally:
        client.close()
    if not live:
        raise Unhealthy("no pool workers running")
    return {"workers": live}


def run_checks() -> tuple[dict[str, str], dict[str, int]]:
    """Each check's verdict ("ok" or "error: …") and the facts the checks counted (e.g. workers)."""
    checks: dict[str, Callable[[], dict]] = {"database": _check_database}
    if settings.REDIS_URL:
        # Without Redis the pool runs inside the web process: there are no workers to count.
        checks.update(redis=_check_redis, workers=_check_workers)
    results, facts = {}, {}
    for name, check in checks.items():
        try:
            facts.update(check())
            results[name] = "ok"
        except Exception as exc:  # noqa: BLE001 - any failure is reported, not raised
            results[name] = f"error: {exc}"
    return results, facts


@require_GET
def health(request: HttpRequest) -> JsonResponse:
    results, facts = run_checks()
    healthy = all(value == "ok" for value in results.values())
    body = {"status": "ok" if healthy else "error", "checks": results, **facts}
    return JsonResponse(body, status=200 if healthy else 503)
