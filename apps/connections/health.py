"""The hub's `workers` health check: with Redis, tool calls need a live pool worker."""

from __future__ import annotations

import time


class NoWorkers(Exception):
    """The check ran and found no pool worker with a fresh heartbeat."""


def check_workers() -> dict:
    """Count pool workers whose heartbeat is fresh; none is unhealthy."""
    # Imported here: the pool modules pull in the MCP SDK (~1.5 s), which Django start-up need not pay.
    import redis

    from apps.connections.default import pool_settings
    from apps.connections.worker import DEFAULT_PREFIX, WORKER_TTL_SECONDS, workers_key

    redis_url, options = pool_settings()
    prefix = options.get("redis_prefix", DEFAULT_PREFIX)
    client = redis.Redis.from_url(redis_url, socket_timeout=2, socket_connect_timeout=2)
    try:
        live = client.zcount(workers_key(prefix), time.time() - WORKER_TTL_SECONDS, "+inf")
    finally:
        client.close()
    if not live:
        raise NoWorkers("no pool workers running")
    return {"workers": live}
