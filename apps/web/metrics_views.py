"""`/metrics`: the hub's Prometheus metrics, for staff and for the networks operators allow.

Counters and histograms come from every process (apps/core/metrics.py); what describes the present
— MCP sessions open, the pool's connections per server — is read here, at scrape time.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterator

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from apps.accounts.services import authenticate_token
from apps.catalog import operations
from apps.core import metrics
from apps.core.client_address import request_client_address
from apps.gateway import state

logger = logging.getLogger(__name__)

BREAKER_STATES = ("closed", "open", "half-open")


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    refusal = _refusal(request)
    if refusal is not None:
        return refusal
    return HttpResponse(metrics.render([PresentState()]), content_type=metrics.CONTENT_TYPE)


def _refusal(request: HttpRequest) -> HttpResponse | None:
    """None when the scraper may read: a staff API token, a signed-in staff user, or an allowed address."""
    header = request.headers.get("Authorization", "")
    if header[:7].lower() == "bearer ":
        token = authenticate_token(header[7:].strip())
        if token is None or not token.allows_api(write=False):
            return _unauthorized(
                "Invalid, expired or revoked token, or one without the api_read scope"
            )
        return None if token.user.is_staff else _forbidden()
    if request.user.is_authenticated:
        return None if request.user.is_staff else _forbidden()
    if _allowed_address(request_client_address(request)):  # not a proxy's own address
        return None
    return _unauthorized("Send Authorization: Bearer <a staff user's API token>")


def _allowed_address(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(
        ip in ipaddress.ip_network(cidr, strict=False)
        for cidr in settings.MCPHUB_METRICS_ALLOW_CIDRS
    )


def _unauthorized(message: str) -> HttpResponse:
    response = HttpResponse(message + "\n", status=401, content_type="text/plain")
    response["WWW-Authenticate"] = 'Bearer realm="mcphub"'
    return response


def _forbidden() -> HttpResponse:
    return HttpResponse("Metrics are for staff only\n", status=403, content_type="text/plain")


class PresentState(Collector):
    """Gauges of the moment: sessions in shared state, and the pool's per-server counters."""

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "mcphub_mcp_sessions_open",
            "MCP sessions open (Streamable HTTP and legacy SSE)",
            value=state.count_sessions(),
        )
        yield from _pool_metrics()


def _pool_metrics() -> Iterator[Metric]:
    up = GaugeMetricFamily(
        "mcphub_pool_up",
        "1 if the connection pool answered this scrape (0: no worker, or it failed)",
    )
    workers = GaugeMetricFamily(
        "mcphub_pool_workers", "Pool workers that answered this scrape (1 when embedded)"
    )
    try:
        overview = operations.pool_overview()
    except Exception as exc:  # boundary: a scrape without a worker still reports everything else
        logger.warning("metrics: the pool did not answer: %s", exc)
        overview = None
    up.add_metric([], 1 if overview is not None and overview.workers else 0)
    yield up
    if overview is None:
        return
    workers.add_metric([], overview.workers)
    yield workers
    families = {
        "open_sessions": GaugeMetricFamily(
            "mcphub_pool_sessions", "Backend sessions the pool holds open", labels=["server"]
        ),
        "live_processes": GaugeMetricFamily(
            "mcphub_pool_processes", "Backend child processes alive", labels=["server"]
        ),
        "inflight": GaugeMetricFamily(
            "mcphub_pool_inflight", "Backend calls in flight", labels=["server"]
        ),
        "restarts": CounterMetricFamily(
            "mcphub_pool_restarts", "Backend restarts since the workers started", labels=["server"]
        ),
        "failures": CounterMetricFamily(
            "mcphub_pool_failures",
            "Backend connection failures (crash, hang, failed start)",
            labels=["server"],
        ),
    }
    breaker = GaugeMetricFamily(
        "mcphub_pool_breaker_state",
        "1 for the circuit breaker's current state",
        labels=["server", "state"],
    )
    for stats in overview.servers:
        for field, family in families.items():
            family.add_metric([stats.server], getattr(stats, field))
        for name in BREAKER_STATES:
            breaker.add_metric([stats.server, name], 1 if stats.circuit == name else 0)
    yield from families.values()
    yield breaker
