"""Hub-wide health: JSON, 200 when every dependency answers, 503 naming those that do not.

Apps add their own checks as a `health_checks` mapping on their AppConfig (name -> (check, when)),
read at each run, so core imports none of them: the connection pool declares its worker count this
way (it imports no app, so it cannot call into core).
"""

from __future__ import annotations

from collections.abc import Callable

from django.apps import apps as django_apps
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.templatetags.static import static
from django.views.decorators.http import require_GET


class Unhealthy(Exception):
    """A check that ran and found something wrong (as opposed to one that could not run)."""


Check = Callable[[], dict]
_checks: dict[str, tuple[Check, Callable[[], bool]]] = {}


def register_check(name: str, check: Check, *, when: Callable[[], bool] = lambda: True) -> None:
    """Add a check: it returns facts to report (e.g. a count) or raises when something is wrong."""
    _checks[name] = (check, when)


def _all_checks() -> dict[str, tuple[Check, Callable[[], bool]]]:
    declared = [getattr(config, "health_checks", {}) for config in django_apps.get_app_configs()]
    return _checks | {name: entry for checks in declared for name, entry in checks.items()}


def redis_client():
    import redis

    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


def _check_database() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return {}


def _check_redis() -> dict:
    client = redis_client()
    try:
        client.ping()
    finally:
        client.close()
    return {}


register_check("database", _check_database)
register_check("redis", _check_redis, when=lambda: bool(settings.REDIS_URL))


def run_checks() -> tuple[dict[str, str], dict[str, int]]:
    """Each check's verdict ("ok" or "error: …") and the facts the checks counted (e.g. workers)."""
    results, facts = {}, {}
    for name, (check, when) in _all_checks().items():
        if not when():
            continue
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


def favicon(request: HttpRequest) -> HttpResponse:
    """The hub's icon where browsers look for it by default (pages link it; the API and admin do not)."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))
