"""No backend outlives the process that started it, even one that ignores stdin EOF and SIGTERM.

Alice's stubborn backend (`tiny.py --stubborn`) only dies to SIGKILL. Whatever happens to the
process holding it (a graceful stop, SIGTERM, SIGKILL, Ctrl-C of a management command stuck on
a server that hangs at initialize), nothing of it is left running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid

import pytest

from apps.catalog.models import McpServer
from apps.toolsets.services import enable_tools
from tests.connections.conftest import free_port
from tests.live_hub import (
    ROOT,
    SERVERS,
    hub_env,
    mcp_client,
    start_private_hub,
    start_redis,
    stop,
    tagged_processes,
)
from tests.waiting import eventually

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120), pytest.mark.django_db(transaction=True)]


def stubborn_server(tag: str, *flags: str) -> McpServer:
    args = ["-I", "-S", str(SERVERS / "tiny.py"), "--stubborn", "--tag", tag, *flags]
    return McpServer.objects.create(
        name="stubborn", transport="stdio", command=sys.executable, args=args
    )


@pytest.fixture
def tag() -> str:
    tag = f"orphan-{uuid.uuid4().hex[:8]}"
    yield tag
    for pid in tagged_processes(tag):  # a failed test must not leave its own leak behind
        os.kill(pid, signal.SIGKILL)


@pytest.fixture
def alice_stubborn(alice, alice_token, tag, make_tool):
    server = stubborn_server(tag)
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=[make_tool(server, "pid")])
    return endpoint


async def _start_backend(hub, endpoint, token: str) -> int:
    async with mcp_client(hub.url(endpoint.path), token) as client:
        result = await client.call_tool("pid", {})
    return int(result.content[0].text)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_stopping_or_killing_the_embedded_web_process_takes_its_backends_along(
    how, alice_stubborn, alice_token, tag, tmp_path
):
    hub = start_private_hub(tmp_path, redis_url=None)
    try:
        pid = _run(_start_backend(hub, alice_stubborn, alice_token))
        assert tagged_processes(tag) == [pid]

        os.killpg(hub.processes[0].pid, getattr(signal, how))
        hub.processes[0].wait(15)
        eventually(
            lambda: not tagged_processes(tag), timeout=5, what=f"backend {pid} to end with the web"
        )
    finally:
        stop(hub.processes)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_stopping_or_killing_the_pool_worker_takes_its_backends_along(
    how, alice_stubborn, alice_token, tag, tmp_path
):
    redis = start_redis(port := free_port(), tmp_path)
    hub = start_private_hub(tmp_path / "hub", redis_url=f"redis://127.0.0.1:{port}/0")
    try:
        web, worker = hub.processes
        pid = _run(_start_backend(hub, alice_stubborn, alice_token))
        assert tagged_processes(tag) == [pid]

        os.killpg(worker.pid, getattr(signal, how))
        worker.wait(25)
        eventually(
            lambda: not tagged_processes(tag),
            timeout=5,
            what=f"backend {pid} to end with the worker",
        )
    finally:
        stop(hub.processes)
        redis.kill()
        redis.wait()


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_mcp_discover_of_a_server_hanging_at_initialize_leaves_nothing_when_interrupted(
    how, tag, transactional_db
):
    stubborn_server(
        tag, "--silent"
    )  # never answers initialize: the command waits for its start timeout
    command = subprocess.Popen(
        [sys.executable, "manage.py", "mcp_discover", "stubborn"],
        cwd=ROOT,
        env=hub_env(embedded=True),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        # Ctrl-C as at a terminal: a suite started in the background (`cmd &`) ignores SIGINT,
        # and so would the command, which inherits that.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        eventually(
            lambda: tagged_processes(tag), timeout=30, what="the command to start the backend"
        )
        command.send_signal(getattr(signal, how))
        command.wait(15)
        eventually(
            lambda: not tagged_processes(tag),
            timeout=5,
            what="the backend to end with mcp_discover",
        )
    finally:
        if command.poll() is None:
            command.kill()
        command.communicate()


def _run(coro):
    import asyncio

    return asyncio.run(coro)
