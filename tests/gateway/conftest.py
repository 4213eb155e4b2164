"""A real hub for gateway tests: Daphne (and, with REDIS_URL, a pool worker) in child processes.

The processes share the test database, so tests use `transactional_db` and commit their data.
The hub starts once per test session; each test makes its own users, tokens and endpoints.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from apps.accounts.services import create_access_token
from apps.catalog.discovery import apply_discovery
from apps.catalog.models import McpServer
from apps.toolsets.services import enable_tools

ROOT = Path(__file__).resolve().parents[2]
SERVERS = ROOT / "tests" / "servers"
VENV_BIN = Path(sys.executable).parent


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _database_url() -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def hub_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        DATABASE_URL=_database_url(),
        SECRET_KEY=settings.SECRET_KEY,
        MCPHUB_ENCRYPTION_KEYS=",".join(settings.MCPHUB_ENCRYPTION_KEYS),
        MCPHUB_DEBUG="false",
        MCPHUB_EMBEDDED_BEAT="false",  # periodic health checks would race the tests' own checks
        PYTHONUNBUFFERED="1",
    )
    if settings.REDIS_URL:
        env["REDIS_URL"] = settings.REDIS_URL
    env.update(extra)
    return env


@dataclass
class HubProcesses:
    base_url: str
    processes: list[subprocess.Popen]
    log_dir: Path

    def url(self, path: str) -> str:
        return self.base_url + path

    def log(self) -> str:
        return "\n".join(p.read_text()[-4000:] for p in sorted(self.log_dir.glob("*.log")))


def _spawn(name: str, args: list[str], env: dict[str, str], log_dir: Path) -> subprocess.Popen:
    log = open(log_dir / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def start_web(port: int, env: dict[str, str], log_dir: Path, name: str = "web") -> subprocess.Popen:
    return _spawn(name, [str(VENV_BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port), "mcphub.asgi:application"], env, log_dir)


def start_worker(env: dict[str, str], log_dir: Path, name: str = "worker") -> subprocess.Popen:
    args = [str(VENV_BIN / "celery"), "-A", "mcphub", "worker", "-Q", "mcp,celery", "--without-gossip", "--without-mingle", "-n", f"{name}@%h"]
    return _spawn(name, args, env, log_dir)


def wait_healthy(base_url: str, processes: list[subprocess.Popen], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in processes):
            raise RuntimeError("a hub process exited during start-up")
        try:
            with urllib.request.urlopen(base_url + "/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"hub at {base_url} did not become healthy")


def wait_for_pool_worker(timeout: float = 60.0) -> None:
    """With REDIS_URL, calls need a live pool worker: wait for one to register its heartbeat."""
    import redis

    from apps.connections.worker import DEFAULT_PREFIX, workers_key

    client = redis.Redis.from_url(settings.REDIS_URL)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if client.zrangebyscore(workers_key(DEFAULT_PREFIX), time.time() - 5, "+inf"):
                return
            time.sleep(0.2)
    finally:
        client.close()
    raise TimeoutError("no pool worker registered")


def stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(scope="session")
def hub(django_db_setup, tmp_path_factory) -> Iterator[HubProcesses]:
    """One web process (+ one pool worker when REDIS_URL is set) for the whole test session."""
    log_dir = tmp_path_factory.mktemp("hub-logs")
    port = free_port()
    env = hub_env(MCPHUB_DATA_DIR=str(tmp_path_factory.mktemp("hub-data")))
    processes = [start_web(port, env, log_dir)]
    if settings.REDIS_URL:
        processes.append(start_worker(env, log_dir))
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base_url, processes)
        if settings.REDIS_URL:
            wait_for_pool_worker()
        yield HubProcesses(base_url, processes, log_dir)
    finally:
        stop(processes)


ECHO = {"name": "echo", "command": sys.executable, "args": [str(SERVERS / "echo.py"), "stdio"]}


@pytest.fixture(scope="session")
def echo_discovery(hub):
    """One real discovery of the echo server through the pool, reused by every test's catalog."""
    from apps.connections.default import run_with_pool

    spec = McpServer(**ECHO).to_spec()
    return run_with_pool(lambda pool: pool.discover(spec))


@pytest.fixture
def echo_server(transactional_db, echo_discovery) -> McpServer:
    """Our echo test server over stdio, in the catalog as discovery found it."""
    server = McpServer.objects.create(**ECHO)
    apply_discovery(server=server, discovery=echo_discovery)
    return server


@pytest.fixture
def alice_endpoint(alice, echo_server):
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=echo_server.tools.all())
    return endpoint


@pytest.fixture
def alice_hub_token(alice) -> str:
    return create_access_token(user=alice, name="gateway tests")[1]


@asynccontextmanager
async def mcp_client(url: str, token: str | None, *, mode: str = "legacy", transport: str = "http", **client_kwargs):
    """The SDK's own client over Streamable HTTP or legacy SSE, with a bearer header."""
    import httpx2
    import mcp
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if transport == "sse":
        target = sse_client(url, headers=headers)
        async with mcp.Client(target, mode="legacy", **client_kwargs) as client:
            yield client
        return
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with mcp.Client(streamable_http_client(url, http_client=http), mode=mode, **client_kwargs) as client:
            yield client


@pytest.fixture(autouse=True)
def _close_thread_connections():
    """Async tests reach the ORM through asgiref's sync thread: close its connection afterwards,
    or the test database cannot be dropped at the end of the run."""
    yield
    from asgiref.sync import SyncToAsync
    from django.db import connections

    SyncToAsync.single_thread_executor.submit(connections.close_all).result()
