"""Hub-wide health: JSON, 200 when every dependency answers, 503 naming those that do not."""

from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET


def _check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _check_redis() -> None:
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
    try:
        client.ping()
    finally:
        client.close()


def run_checks() -> dict[str, str]:
    checks = {"database": _check_database}
    if settings.REDIS_URL:
        checks["redis"] = _check_redis
    results = {}
    for name, check in checks.items():
        try:
            check()
            results[name] = "ok"
        except Exception as exc:  # noqa: BLE001 - any failure is reported, not raised
            results[name] = f"error: {exc}"
    return results


@require_GET
def health(request: HttpRequest) -> JsonResponse:
    results = run_checks()
    healthy = all(value == "ok" for value in results.values())
    return JsonResponse({"status": "ok" if healthy else "error", "checks": results}, status=200 if healthy else 503)
