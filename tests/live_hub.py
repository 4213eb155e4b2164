"""A real hub in child processes: its web server (and, with REDIS_URL, a Celery pool worker).

The processes share the test database, so tests that use one commit their data
(`transactional_db`). The `hub` fixture (tests/conftest.py) starts one per test session.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connection

from tests.waiting import eventually

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


@functools.cache
def _metrics_dir() -> str:
    """This test session's hubs' Prometheus directory. The one settings.py derives from the fixed
    MCPHUB_DATA_DIR of pytest.ini is shared by every test session on the machine: a hub's scrape
    would count another session's chat turns and tool calls."""
    path = tempfile.mkdtemp(prefix="mcphub-test-metrics-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def hub_env(*, embedded: bool = False, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        DATABASE_URL=_database_url(),
        PROMETHEUS_MULTIPROC_DIR=_metrics_dir(),
        SECRET_KEY=settings.SECRET_KEY,
        MCPHUB_ENCRYPTION_KEYS=",".join(settings.MCPHUB_ENCRYPTION_KEYS),
        MCPHUB_DEBUG="false",
        MCPHUB_EMBEDDED_BEAT="false",  # periodic health checks would race the tests' own checks
        # Provider outages waited out for seconds, not minutes: long enough for the outage tests'
        # 5 s, short enough that a test of an unreachable provider ends soon.
        MCPHUB_CHAT_PROVIDER_WAIT="10",
        MCPHUB_RUN_PROVIDER_WAIT="15",
        PYTHONUNBUFFERED="1",
        # Tests read the access log of /mcp/ requests (redaction, what reached the hub).
        MCPHUB_MCP_ACCESS_LOG="true",
    )
    if settings.REDIS_URL and not embedded:
        env["REDIS_URL"] = settings.REDIS_URL
    if embedded:
        env.pop("REDIS_URL", None)
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
        """Every log file whole: a check for what must never be logged (a traceback, a secret) has
        to see all of it; an assertion message shows a slice (`log()[-3000:]`)."""
        return "\n".join(p.read_text() for p in sorted(self.log_dir.glob("*.log")))


# A raw client's first message, for tests that speak HTTP to the gateway without the SDK.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}

# Pids of the hub processes tests started: leak checks count the pool's children, not these.
HUB_PIDS: set[int] = set()


def _spawn(name: str, args: list[str], env: dict[str, str], log_dir: Path) -> subprocess.Popen:
    log = open(log_dir / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
    process = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    HUB_PIDS.add(process.pid)
    return process


def start_web(port: int, env: dict[str, str], log_dir: Path, name: str = "web") -> subprocess.Popen:
    return _spawn(
        name,
        web_command(port, "tests.hub_asgi:application"),
        env,
        log_dir,
    )


def web_command(port: int, app: str = "mcphub.asgi:application") -> list[str]:
    """The one command line of a hub's web process in tests and benchmarks (mcphub/server.py)."""
    return [
        str(VENV_BIN / "python"), "-m", "mcphub.server", "--host", "127.0.0.1", "--port", str(port), "--app", app,
    ]  # fmt: skip


def worker_command(name: str, *options: str) -> list[str]:
    """The one command line of a hub's Celery worker in tests and benchmarks (`options`: more
    arguments, e.g. `--loglevel WARNING`)."""
    return [
        str(VENV_BIN / "celery"),
        "-A",
        "mcphub",
        "worker",
        "-Q",
        "mcp,celery",
        "--without-gossip",
        "--without-mingle",
        "-n",
        f"{name}@%h",
        *options,
    ]


def start_worker(env: dict[str, str], log_dir: Path, name: str = "worker") -> subprocess.Popen:
    return _spawn(name, worker_command(name), env, log_dir)


@contextmanager
def another_web(log_dir: Path) -> Iterator[str]:
    """A further web process of the session's hub (same database and Redis); its base URL."""
    port = free_port()
    process = start_web(port, hub_env(), log_dir, name="web-b")
    try:
        wait_healthy(f"http://127.0.0.1:{port}", [process])
        yield f"http://127.0.0.1:{port}"
    finally:
        stop([process])


def wait_healthy(base_url: str, processes: list[subprocess.Popen], timeout: float = 60.0) -> None:
    def healthy() -> bool:
        if any(p.poll() is not None for p in processes):
            raise RuntimeError("a hub process exited during start-up")
        try:
            with urllib.request.urlopen(base_url + "/health", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    eventually(healthy, timeout=timeout, interval=0.2, what=f"the hub at {base_url} to be healthy")


def wait_for_pool_worker(timeout: float = 60.0, *, redis_url: str | None = None) -> None:
    """With REDIS_URL, calls need a live pool worker: wait for one to register its heartbeat."""
    import redis

    from apps.connections.worker import DEFAULT_PREFIX, workers_key

    client = redis.Redis.from_url(redis_url or settings.REDIS_URL)
    try:
        eventually(
            lambda: client.zrangebyscore(workers_key(DEFAULT_PREFIX), time.time() - 5, "+inf"),
            timeout=timeout,
            interval=0.2,
            what="a pool worker to register",
        )
    finally:
        client.close()


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
async def mcp_client(
    url: str, token: str | None, *, mode: str = "legacy", transport: str = "http", **client_kwargs
):
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
        async with mcp.Client(
            streamable_http_client(url, http_client=http), mode=mode, **client_kwargs
        ) as client:
            yield client


# --- Fault tests: processes of their own, to kill without harming the session's hub ----------


def tagged_processes(tag: str) -> list[int]:
    """Live pids whose command line carries `tag` (test backends started with `--tag TAG`)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if tag.encode() in argv and state != "Z":
            found.append(int(entry))
    return found


def start_redis(port: int, data_dir: Path, *options: str) -> subprocess.Popen:
    """A throwaway redis-server (never the shared one, which other engineers' tests use).

    `options` are more redis-server arguments (later ones win): `--requirepass PW`, or
    `redis_tls_options(...)` to serve TLS on `port` instead of plain RESP.
    """
    args = [
        "redis-server",
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(data_dir),
    ]
    args += options
    process = subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    eventually(lambda: _accepts(port), timeout=10, what="redis-server to accept connections")
    return process


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # the throwaway CA that signed `cert`
    cert: Path  # for 127.0.0.1 and localhost (unless made with another `san`)
    key: Path


def make_tls_files(
    directory: Path, name: str = "redis", san: str = "IP:127.0.0.1,DNS:localhost"
) -> TlsFiles:
    """A throwaway CA and a server certificate it signed (openssl), for a TLS redis-server or
    HTTPS backend; `san` is the names the certificate is valid for (subjectAltName)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = directory / f"{name}-ca.crt", directory / f"{name}-ca.key"
    cert, key, csr = directory / f"{name}.crt", directory / f"{name}.key", directory / f"{name}.csr"
    ext = directory / f"{name}.ext"
    ext.write_text(f"subjectAltName={san}\n")
    for command in (
        [
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            ca_key,
            "-out",
            ca,
            "-days",
            "2",
            "-subj",
            f"/CN={name} test CA",
        ],
        [
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            key,
            "-out",
            csr,
            "-subj",
            "/CN=127.0.0.1",
        ],
        [
            "x509",
            "-req",
            "-in",
            csr,
            "-CA",
            ca,
            "-CAkey",
            ca_key,
            "-CAcreateserial",
            "-out",
            cert,
            "-days",
            "2",
            "-extfile",
            ext,
        ],
    ):
        subprocess.run(["openssl", *map(str, command)], check=True, capture_output=True)
    return TlsFiles(ca, cert, key)


def redis_tls_options(port: int, files: TlsFiles) -> tuple[str, ...]:
    """`start_redis` options: TLS on `port`, no plain port, no client certificates required."""
    return (
        "--port", "0", "--tls-port", str(port), "--tls-cert-file", str(files.cert), "--tls-key-file", str(files.key),
        "--tls-ca-cert-file", str(files.ca), "--tls-auth-clients", "no",
    )  # fmt: skip


def _accepts(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def start_private_hub(
    log_dir: Path, *, redis_url: str | None, worker: bool = True, **extra: str
) -> HubProcesses:
    """The web server (+ a Celery worker when `redis_url`), on the test database, for a test to break.

    `redis_url=None` is the embedded shape. A private Redis (`start_redis`) keeps the worker
    out of the session hub's routing: each worker serves the web processes of its own Redis.
    """
    log_dir.mkdir(parents=True, exist_ok=True)
    env = hub_env(embedded=redis_url is None, MCPHUB_DATA_DIR=str(log_dir), **extra)
    if redis_url:
        env["REDIS_URL"] = redis_url
    port = free_port()
    processes = [start_web(port, env, log_dir)]
    if redis_url and worker:
        processes.append(start_worker(env, log_dir))
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base_url, processes)
        if redis_url and worker:
            wait_for_pool_worker(redis_url=redis_url)
    except BaseException:
        stop(processes)
        raise
    return HubProcesses(base_url, processes, log_dir)


class HttpBackend:
    """tests/servers/echo.py over Streamable HTTP on a fixed port, to stop and restart."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process: subprocess.Popen | None = None

    def start(self) -> HttpBackend:
        args = [sys.executable, str(SERVERS / "echo.py"), "http", str(self.port)]
        self.process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        eventually(lambda: _accepts(self.port), timeout=30, what="the echo HTTP backend to start")
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def restart(self) -> None:
        self.stop()
        self.start()


async def scrape_metrics(
    hub: HubProcesses, token: str
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """`/metrics` of a running hub, as {(sample name, sorted labels): value}."""
    import httpx2
    from prometheus_client.parser import text_string_to_metric_families

    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.get(hub.url("/metrics"), headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def metric(
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


RAW_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def raw_session(
    http, url: str, token: str, *, version: str = "2025-06-18", capabilities: dict | None = None
) -> dict[str, str]:
    """Initialize a session over raw HTTP; the headers every later request of it carries."""
    import json

    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": capabilities or {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    headers = {**RAW_HEADERS, "Authorization": f"Bearer {token}"}
    response = await http.post(url, content=json.dumps(init), headers=headers)
    assert response.json()["result"]["protocolVersion"] == version
    headers.update(
        {"Mcp-Session-Id": response.headers["mcp-session-id"], "MCP-Protocol-Version": version}
    )
    await http.post(
        url,
        content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        headers=headers,
    )
    return headers


async def sse_messages(response):
    """(event id, message) for each SSE event of a streaming response; comments are skipped."""
    import json

    event_id, data = None, []
    async for line in response.aiter_lines():
        if line.startswith("id: "):
            event_id = line[4:]
        elif line.startswith("data: "):
            data.append(line[6:])
        elif line == "" and data:
            yield event_id, json.loads("\n".join(data))
            event_id, data = None, []
