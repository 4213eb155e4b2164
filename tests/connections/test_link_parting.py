"""A pool worker that stops parts from each direct link (`link.BYE`) instead of closing it under a
call its caller just wrote: that call reaches the worker (which hands it back), and the caller
sends what the worker left unanswered to another worker at once, never reporting it lost."""

import asyncio
import json
import os
import time
import uuid

import pytest
import redis

from apps.connections.link import BYE, LinkServer, links_key, open_link
from apps.connections.remote import RemotePool
from apps.connections.worker import draining_key, workers_key
from tests.connections.conftest import text, tiny_spec

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

REDIS_URL = os.environ.get("MCPHUB_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


async def test_a_call_written_as_the_worker_closes_reaches_it_and_the_caller_hears_bye():
    taken: list[dict] = []
    server = LinkServer("127.0.0.1:0", "token", lambda message, link: taken.append(message))
    await server.start()
    heard: list[dict] = []
    link = await open_link(server.address("", ("127.0.0.1", 6379)), heard.append)
    closing = asyncio.ensure_future(server.close())
    link.send(json.dumps({"t": "call", "id": "c1"}))  # written before the caller reads the BYE
    await asyncio.wait_for(link.wait_closed(), 5)
    assert heard == [json.loads(BYE)]
    link.close()  # what a caller does on BYE: the worker then closes its end
    await asyncio.wait_for(closing, 5)
    assert taken == [{"t": "call", "id": "c1"}]  # closed under it without the BYE: never read


async def test_a_caller_whose_call_is_unanswered_at_bye_resends_it_elsewhere_at_once():
    """Two workers in Redis, served by links of this test: `leaving` takes the call and stops
    before it answers (BYE), `staying` answers. The call is answered by `staying` well before the
    heartbeat watch could even call `leaving` lost (its entry stays fresh throughout)."""
    client = redis.Redis.from_url(REDIS_URL, socket_timeout=2)
    try:
        client.ping()
    except redis.RedisError:
        pytest.skip("Redis is not reachable")
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    called = asyncio.Event()

    def leaving_takes(message, link):
        if message.get("t") == "call":
            called.set()

    def staying_answers(message, link):
        if message.get("t") == "call":
            body = {"content": [{"type": "text", "text": "answered by staying"}]}
            link.send(json.dumps({"t": "res", "id": message["id"], "ok": body}))

    servers = {
        "leaving": LinkServer("127.0.0.1:0", "t1", leaving_takes),
        "staying": LinkServer("127.0.0.1:0", "t2", staying_answers),
    }
    for name, server in servers.items():
        await server.start()
        client.hset(links_key(prefix), name, server.address("", ("127.0.0.1", 6379)))
    client.zadd(workers_key(prefix), {"leaving": time.time()})
    pool = RemotePool(REDIS_URL, prefix=prefix)
    try:
        call = asyncio.ensure_future(pool.call_tool(tiny_spec("parting"), "echo", {"text": "x"}))
        await asyncio.wait_for(called.wait(), 10)
        # The worker stops as a real one does: no longer routable, then it parts from its links.
        client.zadd(workers_key(prefix), {"staying": time.time(), "leaving": time.time()})
        client.sadd(draining_key(prefix), "leaving")
        parted = time.monotonic()
        await servers["leaving"].close()
        result = await asyncio.wait_for(call, 10)
        took = time.monotonic() - parted
    finally:
        await pool.aclose()
        await servers["staying"].close()
        client.delete(workers_key(prefix), draining_key(prefix), links_key(prefix))
        client.close()

    assert text(result) == "answered by staying"
    assert took < 1.0, f"the call moved after {took:.1f} s"
