"""Celery's Redis transport, with one client per channel instead of one per command.

kombu's Redis channel builds a new `redis.Redis` around its connection pool for every command it
sends outside the worker's poll loop (`conn_or_acquire`): the web's LPUSH of each task, and the
worker's two pipelines per task received (recording it unacknowledged, then acknowledging it),
both on the worker's path before the task starts. redis-py fills each new client's table of
~170 response callbacks, so building one costs 188 µs of CPU on this kind of machine, against
a whole `delay()` of 1.35 ms (in process against Redis, 2,000 each): 0.19 ms of the web's CPU per
chat turn or run started, and 0.38 ms of the worker's before the turn's first token.

The client is only a wrapper around the channel's pool, which is thread-safe and does the
connecting, so one client per channel serves every command; it follows the pool when the channel
replaces it (after a fork, or on close).
"""

from __future__ import annotations

from contextlib import contextmanager

from kombu.transport import redis


class Channel(redis.Channel):
    _client_for_pool = None

    @contextmanager
    def conn_or_acquire(self, client=None):
        if client:
            yield client
            return
        pool = self.pool
        cached = self._client_for_pool
        if cached is None or cached.connection_pool is not pool:
            cached = self._client_for_pool = self._create_client()
        yield cached


class Transport(redis.Transport):
    Channel = Channel
