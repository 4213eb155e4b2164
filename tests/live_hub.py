"""A real hub in child processes: Daphne (and, with REDIS_URL, a Celery pool worker).

The processes share the test database, so tests that use one commit their data
(`transactional_db`). The `hub` fixture (tests/conftest.py) starts one per test session.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]
SERVERS = ROOT / "tests" / "servers"
VENV_BIN = Path(sys.executable).parent


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


# A raw client's first message, for tests that speak HTTP to the gateway without the SDK.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}

# Pids of the hub processes tests started: leak checks count the pool's children, not these.
HUB_PIDS: set[int] = set()


def _spawn(name: str, args: list[str], env: dict[str, str], log_dir: Path) -> subprocess.Popen:
    log = open(log_dir / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
    process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    HUB_PIDS.add(process.pid)
    return process


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
