"""The hub's `workers` health check: with Redis, tool calls need a live pool worker."""

from __future__ import annotations

import time


def check_workers() -> dict:
    """Count pool workers whose heartbeat is fresh; none is unhealthy."""
    # Imported here: the pool modules pull in the MCP SDK (~1.5 s), which Django start-up need not pay.
    from apps.connections.default import pool_settings
    from apps.connections.worker import DEFAULT_PREFIX, WORKER_TTL_SECONDS, workers_key
    from apps.core.views import Unhealthy, redis_client

    prefix = pool_settings()[1].get("redis_prefix", DEFAULT_PREFIX)
    client = redis_client()
    try:
        live = client.zcount(workers_key(prefix), time.time() - WORKER_TTL_SECONDS, "+inf")
    finally:
        client.close()
    if not live:
        raise Unhealthy("no pool workers running")
    return {"workers": live}
