"""The Redis path: a web process calls through RemotePool; backends live in a worker process."""

import asyncio
import os
import subprocess
import uuid

import mcp_types as types
import pytest
import redis
from mcp.shared.exceptions import MCPError

from apps.connections.errors import CallTimeout, ServerCrashed
from apps.connections.hooks import Relay
from apps.connections.link import Link, links_key, open_link
from apps.connections.remote import RemotePool
from tests.connections.conftest import PYTHON, child_pids, sdk_spec, text, tiny_spec
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

REDIS_URL = os.environ.get("MCPHUB_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def worker():
    """One worker process for the module: importing the SDK costs ~2 s per process."""
    try:
        redis.Redis.from_url(REDIS_URL, socket_timeout=2).ping()
    except redis.RedisError:
        pytest.skip("Redis is not reachable")
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    proc = subprocess.Popen(
        [
            PYTHON,
            "-m",
            "apps.connections.worker",
            "--redis-url",
            REDIS_URL,
            "--prefix",
            prefix,
            "--options",
            '{"probe_timeout": 1.0}',
        ],
        cwd=ROOT,
    )
    yield proc, prefix
    proc.terminate()
    assert proc.wait(15) == 0
    assert child_pids(proc.pid) == [] or proc.poll() is not None


async def _remote(prefix: str, **kwargs) -> RemotePool:
    pool = RemotePool(REDIS_URL, prefix=prefix, **kwargs)
    # The worker process needs a moment to import and register.
    await eventually_async(
        lambda: pool._live_workers(refresh=True), interval=0.1, what="the pool worker to register"
    )
    return pool


async def test_calls_run_in_the_worker_process_not_here(worker):
    proc, prefix = worker
    async with await _remote(prefix) as pool:
        spec = tiny_spec("tiny")
        assert text(await pool.call_tool(spec, "echo", {"text": "via redis"})) == "via redis"
        backend_pid = int(text(await pool.call_tool(spec, "pid")))
        assert child_pids() == [proc.pid] and child_pids(proc.pid) == [
            backend_pid
        ]  # our only child: the worker
        results = await asyncio.gather(
            *(pool.call_tool(spec, "echo", {"text": str(i)}) for i in range(100))
        )
        assert [text(r) for r in results] == [str(i) for i in range(100)]
        stats = await pool.stats()
        assert [s["servers"]["tiny"]["pid"] for s in stats.values()] == [backend_pid]


async def test_errors_keep_their_kind_across_the_wire(worker):
    _, prefix = worker
    async with await _remote(prefix) as pool:
        spec = sdk_spec("echo", timeout=0.5)
        with pytest.raises(MCPError) as excinfo:
            await pool.list_resource_templates(tiny_spec("tiny"))
        assert excinfo.value.code == -32601
        with pytest.raises(CallTimeout, match="timed out after 0.5s"):
            await pool.call_tool(spec, "slow", {"seconds": 30})
        with pytest.raises(ServerCrashed, match="echo: fatal error"):
            await pool.call_tool(spec, "crash", timeout=10)
        assert "echo: fatal error" in await pool.stderr_tail("echo")


async def test_progress_sampling_and_notifications_cross_the_wire(worker):
    _, prefix = worker
    seen: list[str] = []

    async def on_notification(server: str, notification: types.ServerNotification) -> None:
        seen.append(f"{server}:{notification.method}")

    async def sample(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            role="assistant", model="m", content=types.TextContent(type="text", text="42")
        )

    updates: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append(progress)

    async with await _remote(prefix, on_notification=on_notification) as pool:
        spec = sdk_spec("echo")
        found = await pool.discover(spec)
        assert "ask" in {t.name for t in found.tools}
        assert (
            text(await pool.call_tool(spec, "ask", {"question": "?"}, relay=Relay(sampling=sample)))
            == "42"
        )
        await pool.call_tool(spec, "progress", {"steps": 5}, progress_callback=on_progress)
        await pool.call_tool(spec, "touch_tools")
        await eventually_async(lambda: "echo:notifications/tools/list_changed" in seen)
    assert updates and updates[-1] == 5.0 and updates == sorted(updates)
    assert "echo:notifications/tools/list_changed" in seen


async def test_log_lines_cross_the_wire_before_the_result_and_raw_results_stay_json(worker):
    _, prefix = worker
    events: list[str] = []

    async def log(params: dict) -> None:
        await asyncio.sleep(0.01)  # a slow client stream must still be written before the result
        events.append(f"log:{params['data']}")

    async def on_notification(server: str, notification: types.ServerNotification) -> None:
        if isinstance(notification, types.LoggingMessageNotification):
            events.append(f"hook:{notification.params.data}")

    async with await _remote(prefix, on_notification=on_notification) as pool:
        spec = sdk_spec("echo")
        result = await pool.call_tool(spec, "chatty", {"count": 3}, relay=Relay(log=log), raw=True)
        events.append(f"result:{result['content'][0]['text']}")
        assert events == ["log:line 0", "log:line 1", "log:line 2", "result:said 3"]
        typed = await pool.call_tool(spec, "add", {"a": 1, "b": 2})
        assert isinstance(typed, types.CallToolResult) and typed.structured_content == {"result": 3}
        events.clear()
        await pool.call_tool(spec, "chatty", {"count": 1})  # nobody claims it: the events channel
        await eventually_async(lambda: events)
        assert events == ["hook:line 0"]


async def test_specs_cross_the_wire_encrypted(worker, monkeypatch):
    """The full spec (with decrypted secrets) is Fernet-encrypted with the project's keys."""
    from apps.connections.codec import DjangoCodec, default_codec

    _, prefix = worker
    assert isinstance(
        default_codec(), DjangoCodec
    )  # Django settings are configured in this test run
    for direct in (True, False):  # by the worker's direct link, and by its Redis inbox
        seen: list[bytes] = []
        async with await _remote(prefix, direct=direct) as pool:
            inbox = f"{prefix}:inbox:{(await pool._live_workers(refresh=True))[0]}"
            original = pool._redis.call

            async def record(*args, inbox=inbox, seen=seen, original=original):
                if args[0] == "RPUSH" and args[1] == inbox:
                    seen.append(args[2].encode())
                return await original(*args)

            def send(self, message: str, send=Link.send, seen=seen) -> None:
                seen.append(message.encode())
                send(self, message)

            pool._redis.call = record
            monkeypatch.setattr(Link, "send", send)
            spec = tiny_spec(f"secretive-{direct}", env={"API_TOKEN": "s3cr3t-value"})
            assert text(await pool.call_tool(spec, "env", {"name": "API_TOKEN"})) == "s3cr3t-value"
            assert bool(pool._links) is direct
        monkeypatch.undo()
        assert seen and all(b"s3cr3t-value" not in m for m in seen)
        assert b'"SE":' in seen[0]


async def test_a_call_whose_link_breaks_is_answered_through_redis(worker):
    _, prefix = worker
    async with await _remote(prefix) as pool:
        spec = sdk_spec("echo")
        assert text(await pool.call_tool(spec, "echo", {"text": "warm"})) == "warm"
        (link,) = pool._links.values()
        call = asyncio.ensure_future(pool.call_tool(spec, "slow", {"seconds": 1}))
        await asyncio.sleep(0.3)  # the worker is running it
        link._abort()
        assert text(await call) == "done"
        assert text(await pool.call_tool(spec, "echo", {"text": "again"})) == "again"
        assert [*pool._links.values()] != [link]  # a new link took over


async def test_a_link_needs_the_workers_token_and_without_one_redis_carries_the_calls(worker):
    _, prefix = worker
    client = redis.Redis.from_url(REDIS_URL, socket_timeout=5)
    async with await _remote(prefix) as pool:
        worker_id = (await pool._live_workers(refresh=True))[0]
        address = client.hget(links_key(prefix), worker_id).decode()
        where, token = address.split()
        with pytest.raises(ConnectionError, match="refused the link"):
            await open_link(f"{where} not-{token}", lambda message: None)
        client.hset(links_key(prefix), worker_id, f"{where} not-{token}")
        try:
            assert text(await pool.call_tool(sdk_spec("echo"), "echo", {"text": "hi"})) == "hi"
            assert pool._links == {}
        finally:
            client.hset(links_key(prefix), worker_id, address)
    async with await _remote(prefix) as pool:
        assert text(await pool.call_tool(sdk_spec("echo"), "echo", {"text": "hi"})) == "hi"
        assert [*pool._links] == [worker_id]
    client.close()


async def test_a_worker_without_the_keys_says_so(worker):
    from apps.connections.codec import FernetCodec

    _, prefix = worker
    other = FernetCodec(
        ["Zm9yZWlnbi1rZXktZm9yLXRlc3RzLW9ubHktMzJieXQ="]
    )  # keys the worker does not have
    async with await _remote(prefix, codec=other) as pool:
        with pytest.raises(Exception, match="decrypt|MCPHUB_ENCRYPTION_KEYS"):
            await pool.call_tool(tiny_spec("wrong-key", env={"X": "1"}), "echo", {"text": "x"})
