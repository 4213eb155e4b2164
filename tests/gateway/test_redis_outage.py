"""Redis killed and restarted under load: callers see 503 + Retry-After or clear errors, never a 500,
and the hub works again within seconds of Redis coming back.

A hub of its own (web server + a Celery worker) on a throwaway redis-server: the shared Redis is
never touched. Redis keeps no data here (like a restart without persistence), so MCP sessions
are gone afterwards and clients initialize again on the 404, as the transport spec says.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass, field

import httpx2
import pytest

from apps.accounts.services import create_access_token
from apps.catalog.models import McpServer
from apps.toolsets.services import enable_tools
from tests.live_hub import INITIALIZE, SERVERS, free_port, start_private_hub, start_redis, stop

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120), pytest.mark.django_db(transaction=True)]

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@dataclass
class Outcome:
    started: float
    took: float
    status: int  # HTTP status; 0 when the connection itself failed
    ok: bool
    retry_after: str | None = None


@dataclass
class Caller:
    url: str
    token: str
    outcomes: list[Outcome] = field(default_factory=list)
    session: str | None = None

    async def run(self, until: float) -> None:
        async with httpx2.AsyncClient(
            timeout=30, headers={**HEADERS, "Authorization": f"Bearer {self.token}"}
        ) as http:
            while time.monotonic() < until:
                started = time.monotonic()
                status, ok, retry_after = await self._call(http)
                self.outcomes.append(
                    Outcome(started, time.monotonic() - started, status, ok, retry_after)
                )
                if not ok:
                    await asyncio.sleep(0.05)  # a caller pauses after a failure, as clients do

    async def _call(self, http: httpx2.AsyncClient) -> tuple[int, bool, str | None]:
        try:
            if self.session is None:
                response = await http.post(self.url, json=INITIALIZE)
                if response.status_code != 200:
                    return response.status_code, False, response.headers.get("retry-after")
                self.session = response.headers["mcp-session-id"]
            message = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "hi"}},
            }
            response = await http.post(
                self.url, json=message, headers={"Mcp-Session-Id": self.session}
            )
        except httpx2.TransportError:
            return 0, False, None
        if response.status_code == 404:
            self.session = None  # Redis lost the session: start a new one
        ok = response.status_code == 200 and '"isError":false' in response.text.replace(" ", "")
        return response.status_code, ok, response.headers.get("retry-after")


def test_a_redis_restart_under_load_gives_503s_not_500s_and_recovers_in_seconds(
    alice, make_tool, tmp_path
):
    # Eight callers make ~1,200 calls a second: the default 6,000 a minute per token would answer
    # 429 within seconds of Redis (and the counter) coming back. The limit is not under test here.
    _, token = create_access_token(user=alice, name="load", rate_limit_per_minute=2_000_000_000)
    args = ["-I", "-S", str(SERVERS / "tiny.py")]
    server = McpServer.objects.create(
        name="tiny", transport="stdio", command=sys.executable, args=args
    )
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=[make_tool(server, "echo")])
    redis = start_redis(port := free_port(), tmp_path)
    hub = start_private_hub(tmp_path / "hub", redis_url=f"redis://127.0.0.1:{port}/0")
    try:
        callers = [Caller(hub.url(endpoint.path), token) for _ in range(8)]
        back_at = asyncio.run(_outage_under_load(callers, redis, port, tmp_path))
    finally:
        stop(hub.processes)
        redis = _running_redis
        if redis is not None:
            redis.kill()
            redis.wait()

    outcomes = [o for c in callers for o in c.outcomes]
    statuses = {o.status for o in outcomes}
    assert not statuses & {500, 502, 504}, f"statuses seen: {sorted(statuses)}\n{hub.log()[-3000:]}"
    assert all(o.retry_after for o in outcomes if o.status == 503), "a 503 without Retry-After"
    assert any(not o.ok for o in outcomes), "the outage was not noticed: the test proves nothing"
    # Three seconds, not two: on a 2-core box whose suite runs 1.7× slower than the one this was
    # written on, one call in ~600 still failed 2 s after Redis returned (the stale pooled
    # connections are retried as callers reach them); "within seconds" is the promise.
    late = [o for o in outcomes if o.started > back_at + 3.0]
    failed = [o for o in late if not o.ok]
    assert late and not failed, (
        f"{len(failed)} of {len(late)} calls failed 3 s after Redis returned: "
        f"statuses {sorted({o.status for o in failed})}"
    )
    assert max(o.took for o in outcomes) < 5.0
    logs = (
        hub.log()
    )  # web and worker, whole: a traceback during the outage is long scrolled off the tail
    assert "Traceback" not in logs, logs[max(0, logs.find("Traceback") - 1000) :][:6000]


_running_redis = None


async def _outage_under_load(callers: list[Caller], redis, port: int, tmp_path) -> float:
    """Calls for 1 s, Redis dead for 1.5 s, calls until 4 s after it is back; when Redis accepted
    connections again."""
    global _running_redis
    _running_redis = redis
    until = time.monotonic() + 6.5
    load = asyncio.gather(*(c.run(until) for c in callers))
    await asyncio.sleep(1.0)  # the scenario: calls for 1 s, Redis dead for 1.5 s
    redis.kill()
    await asyncio.to_thread(redis.wait)
    await asyncio.sleep(1.5)
    _running_redis = await asyncio.to_thread(start_redis, port, tmp_path)
    back_at = time.monotonic()
    await load
    # Calls go on for 4 s after Redis is back, however long its kill and restart took on a loaded
    # machine (the 6.5 s above can run out first, and then nothing shows the recovery).
    await asyncio.gather(*(c.run(back_at + 4.0) for c in callers))
    return back_at
