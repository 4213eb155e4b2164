"""The Redis path on Redis as production runs it: TLS, an ACL user with a password, a restart mid-load.

A throwaway redis-server that speaks only TLS (a throwaway CA) and knows only ACL users; one
real Celery worker started from the same `rediss://` REDIS_URL as a deployment's (so Celery's
broker and result backend, and the pool worker's own client, all log in over TLS); the web side
is a `RemotePool`, as in the web process.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time

import pytest
import redis

from apps.connections.errors import PoolError
from apps.connections.remote import RemotePool
from apps.connections.worker import DEFAULT_PREFIX, workers_key
from tests.connections.conftest import free_port, live_pool, text, tiny_spec
from tests.live_hub import (
    ROOT,
    hub_env,
    make_tls_files,
    redis_tls_options,
    start_redis,
    start_worker,
    stop,
)
from tests.waiting import eventually

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.timeout(180),
    pytest.mark.django_db(transaction=True),
]

# The default user is off: only `hub` (a password with URL-reserved characters) may log in.
USER_OPTIONS = (
    "--user",
    "default",
    "off",
    "--user",
    "hub",
    "on",
    ">p@ss:w/rd",
    "~*",
    "&*",
    "+@all",
)


class SecureRedis:
    """A TLS + ACL redis-server that a test may kill and start again on the same port."""

    def __init__(self, tmp) -> None:
        self.tmp = tmp
        self.tls = make_tls_files(tmp)
        self.port = free_port()
        self.url = f"rediss://hub:p%40ss%3Aw%2Frd@127.0.0.1:{self.port}/0?ssl_cert_reqs=required&ssl_ca_certs={self.tls.ca}"
        self.process = None
        self.start()

    def start(self) -> None:
        self.process = start_redis(
            self.port, self.tmp, *redis_tls_options(self.port, self.tls), *USER_OPTIONS
        )

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def admin(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_timeout=5)


@pytest.fixture(scope="module")
def secure(django_db_setup, django_db_blocker, tmp_path_factory):
    """(SecureRedis, the Celery worker process) with the worker registered."""
    tmp = tmp_path_factory.mktemp("secure-redis")
    server = SecureRedis(tmp)
    with django_db_blocker.unblock():
        env = hub_env(REDIS_URL=server.url, MCPHUB_DATA_DIR=str(tmp))
    worker = start_worker(env, tmp, name="tls-worker")
    admin = server.admin()
    try:
        eventually(
            lambda: worker.poll() is not None or admin.zcard(workers_key(DEFAULT_PREFIX)) == 1,
            timeout=90,
            what=lambda: (tmp / "tls-worker.log").read_text()[-3000:],
        )
        assert worker.poll() is None, (tmp / "tls-worker.log").read_text()[-3000:]
        yield server, worker
    finally:
        admin.close()
        stop([worker])
        server.kill()


async def test_calls_over_tls_as_an_acl_user_and_celery_uses_the_same_url(secure):
    server, worker = secure
    async with await live_pool(server.url) as pool:
        spec = tiny_spec("tls-echo", "--tag", "tls-echo")
        assert text(await pool.call_tool(spec, "echo", {"text": "over tls"})) == "over tls"
        stats = await pool.stats()
    assert len(stats) == 1 and "error" not in next(iter(stats.values()))
    admin = server.admin()
    try:
        # Celery's broker declared its queues in this Redis: it logged in over TLS as `hub` too.
        assert admin.exists("_kombu.binding.mcp") and admin.exists("_kombu.binding.celery")
        clients = admin.client_list()
        assert clients and {c["user"] for c in clients} == {"hub"}
    finally:
        admin.close()
    plain = RemotePool(f"redis://hub:p%40ss%3Aw%2Frd@127.0.0.1:{server.port}/0")
    started = time.monotonic()
    with pytest.raises(ConnectionError):  # plain RESP to a TLS-only Redis: a clear, quick failure
        await plain.call_tool(spec, "echo", {"text": "x"})
    await plain.aclose()
    assert time.monotonic() - started < 6.0


async def test_a_redis_restart_mid_load_leaves_no_caller_stuck_and_calls_work_again(secure):
    server, worker = secure
    fast = tiny_spec("tls-fast", "--tag", "tls-fast")
    # One server each: tiny.py answers one request at a time, and three sleeps in a row outlived
    # the test by 16 s, which the worker's stop then waited out as calls in flight.
    slow = [tiny_spec(f"tls-slow-{n}", "--tag", "tls-slow") for n in range(3)]
    async with await live_pool(server.url) as pool:
        assert text(await pool.call_tool(fast, "echo", {"text": "warm"})) == "warm"
        outcomes: list[tuple[float, float, str]] = []  # (started, took, "ok" or the error)
        until = time.monotonic() + 7.0

        async def caller() -> None:
            while time.monotonic() < until:
                started = time.monotonic()
                try:
                    assert (
                        text(await pool.call_tool(fast, "echo", {"text": "hi"}, timeout=20)) == "hi"
                    )
                    outcome = "ok"
                except (
                    PoolError,
                    ConnectionError,
                ) as exc:  # the clear errors; anything else fails the test
                    outcome = f"{type(exc).__name__}: {exc}"
                    await asyncio.sleep(0.05)  # a caller pauses after a failure, as clients do
                outcomes.append((started, time.monotonic() - started, outcome))

        # Calls that run for 8 s are in flight when Redis dies: their replies can never come.
        in_flight = [
            asyncio.ensure_future(pool.call_tool(spec, "sleep", {"seconds": 8}, timeout=30))
            for spec in slow
        ]
        load = asyncio.gather(*(caller() for _ in range(8)))
        await asyncio.sleep(1.5)  # the scenario: load for 1.5 s, then Redis dies
        killed_at = time.monotonic()
        server.kill()
        stuck = await asyncio.wait_for(asyncio.gather(*in_flight, return_exceptions=True), 10)
        in_flight_failed_after = time.monotonic() - killed_at
        await asyncio.sleep(1.0)  # and stays down for 1 s
        await asyncio.to_thread(server.start)
        back_at = time.monotonic()
        await load
        assert worker.poll() is None, "the Celery worker died with Redis"

    assert all(isinstance(r, PoolError) and "lost its link to Redis" in str(r) for r in stuck), (
        stuck
    )
    assert in_flight_failed_after < 3.0, f"in-flight callers waited {in_flight_failed_after:.1f}s"
    errors = [o for o in outcomes if o[2] != "ok"]
    assert errors, "the outage was not noticed: the test proves nothing"
    assert max(took for _, took, _ in outcomes) < 5.0, max(outcomes, key=lambda o: o[1])
    late = [o for o in outcomes if o[0] > back_at + 2.0]
    assert late and all(o[2] == "ok" for o in late), [o for o in late if o[2] != "ok"][:3]


# Every Redis user of the hub, configured from REDIS_URL alone by mcphub/settings.py.
_EVERY_REDIS_USER = """
import asyncio
import django

django.setup()
from channels.layers import get_channel_layer
from django.conf import settings
from django.core.cache import cache

from apps.connections.resp import RespClient
from apps.core import hotstate
from apps.core.channel_layer import INBOX_PREFIX
from mcphub.celery import app

cache.set("tls-check", "cached", 30)
assert cache.get("tls-check") == "cached", "cache"
assert hotstate.sync_redis().ping(), "hot state (sync)"
with app.connection_for_write() as broker:
    broker.ensure_connection(max_retries=1)
    broker.default_channel.client.ping()
assert app.backend.client.ping(), "Celery result backend"


async def main():
    assert await hotstate.async_redis().ping(), "hot state (async)"
    layer = get_channel_layer()
    channel = await layer.new_channel(INBOX_PREFIX)  # one other processes send to: subscribed in Redis
    await layer.send(channel, {"type": "tls.check", "text": "layered"})
    assert (await asyncio.wait_for(layer.receive(channel), 5))["text"] == "layered", "channel layer"
    client = RespClient(settings.REDIS_URL)
    assert await client.call("PING") == b"PONG", "pool client"
    await client.aclose()


asyncio.run(main())
print("every Redis user is connected")
"""


def test_every_redis_user_of_the_hub_reads_tls_and_credentials_from_redis_url(
    secure, django_db_blocker, tmp_path
):
    server, _ = secure
    with django_db_blocker.unblock():
        env = hub_env(
            REDIS_URL=server.url,
            MCPHUB_DATA_DIR=str(tmp_path),
            DJANGO_SETTINGS_MODULE="mcphub.settings",
        )
    done = subprocess.run(
        [sys.executable, "-c", _EVERY_REDIS_USER],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "every Redis user is connected" in done.stdout
    assert "p@ss" not in done.stdout + done.stderr and "insecure" not in done.stderr.lower()
