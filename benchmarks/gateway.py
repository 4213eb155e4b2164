"""The MCP gateway's cost: tool calls, big tool lists and idle sessions, hub vs the backend direct.

    .venv/bin/python benchmarks/gateway.py [--calls 2000] [--rounds 4] [--sessions 1000] [--quick]
                                            [--modes prod,embedded] [--no-sse]

One command starts everything it measures, on this machine:
  backends   tests/servers/echo.py over Streamable HTTP (the `echo` tool, also reached directly)
             and benchmarks/servers/many_tools.py (one backend with 1,000 generated tools)
  prod       the hub in production mode: its web server (mcphub/server.py) + a Celery worker (holding the pool) + its own
             redis-server on a free port + Postgres (a fresh `mcphub_bench` database, dropped after)
  embedded   the hub in the embedded default: the web server alone, SQLite in a temp dir, pool in-process
  base       with --baseline CHECKOUT: the production shape again from another checkout (say, a
             `git archive` of the commit before a change), interleaved with this one's: an A/B
             of hub CPU per call on one loaded machine; served by Daphne (--base-server: a checkout
             from before mcphub/server.py) or by uvicorn's command line

It seeds a user, a token (rate limit out of the way), an endpoint per path and one with 1,000
enabled tools from 20 servers (catalog rows), then measures, interleaved round by round so load
drift hits every path alike, with one light raw HTTP/1.1 keep-alive client (initialize once per
connection, then POST tools/call; the same code for the backend and the hub):
  - tools/call p50 / p99 / calls/s at concurrency 1, 8, 32: direct to the echo backend over HTTP,
    and through each hub to the echo tool over stdio (a child of the worker / of the web process)
    and over HTTP (the same echo backend process the direct path uses);
  - hub CPU per call: utime+stime of the web, worker and redis-server processes ÷ calls, each
    and their sum (the backends, stdio children included, excluded);
  - tools/list of 1,000 tools: the hub endpoint vs the 1,000-tool backend directly;
  - memory per idle session: 1,000 initialized sessions (web RSS and Redis used_memory growth),
    then the same with an open GET SSE stream each.
The machine's load average is printed with the figures: on a 2-core box it moves them.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import resource
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
VENV_BIN = Path(sys.executable).parent
ECHO = ROOT / "tests" / "servers" / "echo.py"
MANY = ROOT / "benchmarks" / "servers" / "many_tools.py"
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
PG = "postgres://postgres@127.0.0.1:5432"
BENCH_DB = "mcphub_bench"
PROTOCOL = "2025-06-18"
CONCURRENCY = (1, 8, 32)
TARGETS = {
    "overhead_ms": 1.0,  # p50 at concurrency 1, over direct
    "throughput_ratio": 0.6,  # calls/s at concurrency 32, ÷ direct's
    "cpu_ms": 1.0,  # hub CPU per call: web + worker + redis-server
    "session_kb": 50.0,
}


# -- seeding: runs in a child process with the hub's environment ----------------------------


def seed(echo_url: str, tools: int, servers: int) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)

    from apps.accounts.models import User
    from apps.accounts.services import create_access_token
    from apps.catalog.introspection import apply_discovery, estimate_tokens
    from apps.catalog.models import McpServer, Tool
    from apps.connections.pool import Pool
    from apps.toolsets.services import create_endpoint, set_enabled_tools
    from benchmarks.servers.many_tools import tool_defs

    user = User.objects.create_user("bench", "bench@example.com", secrets.token_urlsafe(12))
    stdio = McpServer.objects.create(
        name="echo-stdio", command=sys.executable, args=[str(ECHO), "stdio"]
    )
    http = McpServer.objects.create(
        name="echo-http", transport=McpServer.Transport.STREAMABLE_HTTP, url=echo_url
    )

    async def discover() -> list[Any]:
        async with Pool() as pool:
            return [await pool.discover(stdio.to_spec()), await pool.discover(http.to_spec())]

    for server, found in zip((stdio, http), asyncio.run(discover())):
        apply_discovery(server=server, discovery=found)

    defs = tool_defs(tools)
    per = -(-tools // servers)
    for n in range(servers):
        server = McpServer.objects.create(name=f"many-{n:02d}", command="/bin/false")
        Tool.objects.bulk_create(
            Tool(
                server=server,
                name=d["name"],
                description=d["description"],
                input_schema=d["inputSchema"],
                token_estimate=estimate_tokens(d),
            )
            for d in defs[n * per : (n + 1) * per]
        )
    endpoints = {}
    for slug, tool_set in (
        ("bench-stdio", Tool.objects.filter(server=stdio, name="echo")),
        ("bench-http", Tool.objects.filter(server=http, name="echo")),
        ("bench-many", Tool.objects.filter(server__name__startswith="many-")),
    ):
        endpoint = create_endpoint(owner=user, name=slug, slug=slug)
        set_enabled_tools(endpoint=endpoint, tools=list(tool_set), enforce_budget=False)
        endpoints[slug] = endpoint.tools.count()
    _, token = create_access_token(user=user, name="benchmark", rate_limit_per_minute=2_000_000_000)
    return {"token": token, "endpoints": endpoints}


# -- processes ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Processes:
    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.procs: list[subprocess.Popen[bytes]] = []

    def spawn(
        self, name: str, args: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT
    ) -> subprocess.Popen[bytes]:
        log = open(self.log_dir / f"{name}.log", "w")  # noqa: SIM115 - lives as long as the process
        proc = subprocess.Popen(
            args, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.procs.append(proc)
        return proc

    def check(self) -> None:
        for proc in self.procs:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"{proc.args[:3]} exited ({proc.returncode}); logs in {self.log_dir}"
                )

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def base_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
    }
    env.update(
        SECRET_KEY=secrets.token_urlsafe(40),
        MCPHUB_ENCRYPTION_KEYS=base64.urlsafe_b64encode(os.urandom(32)).decode(),
        MCPHUB_DEBUG="false",
        MCPHUB_ENV_FILE="/nonexistent",
        # The seeded user's own provider (the scripted LLM) and backends live on this machine: the
        # outbound address policy refuses loopback for what a non-staff user chose, unless allowed.
        MCPHUB_OUTBOUND_ALLOW="127.0.0.1",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def psql(sql: str) -> None:
    subprocess.run(["psql", f"{PG}/postgres", "-q", "-c", sql], check=True, capture_output=True)


def wait_port(port: int, procs: Processes, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        procs.check()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listening on {port}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_bytes(pid: int) -> int:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE


def load() -> float:
    return os.getloadavg()[0]


# -- the client: raw HTTP/1.1 with keep-alive, just enough Streamable HTTP ------------------


class HttpConnection:
    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(
            "127.0.0.1", self.port, limit=1 << 20
        )

    def send(self, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> None:
        assert self.writer is not None
        lines = [
            f"{method} {path} HTTP/1.1",
            f"Host: 127.0.0.1:{self.port}",
            f"Content-Length: {len(body)}",
        ]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)

    async def read_head(self) -> tuple[int, dict[str, str]]:
        assert self.reader is not None
        raw = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers = {}
        for line in raw[1:]:
            if line:
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
        return int(raw[0].split(" ", 2)[1]), headers

    async def read_body(self, headers: dict[str, str]) -> bytes:
        assert self.reader is not None
        if "content-length" in headers:
            return await self.reader.readexactly(int(headers["content-length"]))
        if headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readuntil(b"\r\n")
                    return b"".join(chunks)
                chunks.append((await self.reader.readexactly(size + 2))[:-2])
        return await self.reader.read()

    async def request(
        self, method: str, path: str, headers: dict[str, str], body: bytes = b""
    ) -> tuple[int, dict[str, str], bytes]:
        """One request; like any HTTP client, reconnect once when the server closed an idle
        keep-alive connection (uvicorn does after 5 s)."""
        for attempt in (1, 2):
            if self.reader is None or self.reader.at_eof():
                self.close()
                await self.open()
            self.send(method, path, headers, body)
            try:
                status, response_headers = await self.read_head()
            except (asyncio.IncompleteReadError, ConnectionResetError) as exc:
                if attempt == 2 or (isinstance(exc, asyncio.IncompleteReadError) and exc.partial):
                    raise
                self.reader = None
                continue
            return status, response_headers, await self.read_body(response_headers)
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def rpc_message(headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The JSON-RPC response in a plain JSON body or in an SSE stream's events."""
    if headers.get("content-type", "").startswith("text/event-stream"):
        for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
            data = b"\n".join(
                line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:")
            )
            if data:
                message = json.loads(data)
                if "id" in message:
                    return message
        raise RuntimeError(f"no response in SSE body {body[:200]!r}")
    return json.loads(body)


class McpSession:
    """One Streamable HTTP session on one keep-alive connection."""

    def __init__(self, port: int, path: str, token: str | None) -> None:
        self.conn = HttpConnection(port)
        self.path = path
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.next_id = 0
        self.session_id: str | None = None

    async def start(self) -> None:
        await self.conn.open()
        await self.initialize()

    async def initialize(self) -> str:
        headers = {
            k: v
            for k, v in self.headers.items()
            if k not in ("Mcp-Session-Id", "MCP-Protocol-Version")
        }
        params = {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        }
        body = json.dumps(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
        ).encode()
        status, response_headers, data = await self.conn.request("POST", self.path, headers, body)
        if status != 200:
            raise RuntimeError(f"initialize: HTTP {status} {data[:300]!r}")
        rpc_message(response_headers, data)
        self.session_id = response_headers["mcp-session-id"]
        self.headers.update({"Mcp-Session-Id": self.session_id, "MCP-Protocol-Version": PROTOCOL})
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
        status, _, _ = await self.conn.request("POST", self.path, self.headers, note)
        if status != 202:
            raise RuntimeError(f"notifications/initialized: HTTP {status}")
        return self.session_id

    async def rpc(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], int]:
        self.next_id += 1
        body = json.dumps(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        ).encode()
        status, headers, data = await self.conn.request("POST", self.path, self.headers, body)
        if status != 200:
            raise RuntimeError(f"{method}: HTTP {status} {data[:300]!r}")
        message = rpc_message(headers, data)
        if "error" in message:
            raise RuntimeError(f"{method}: {message['error']}")
        return message["result"], len(data)

    def close(self) -> None:
        self.conn.close()


# -- what is measured -----------------------------------------------------------------------


@dataclass
class Hub:
    mode: str  # "prod" | "embedded" | "base" (production, from --baseline's checkout)
    port: int
    web: subprocess.Popen[bytes]
    worker: subprocess.Popen[bytes] | None = None
    redis_pid: int | None = None
    redis_port: int | None = None

    def cpu(self) -> float:
        return sum(cpu_seconds(p.pid) for p in (self.web, self.worker) if p is not None)

    def worker_cpu(self) -> float:
        return cpu_seconds(self.worker.pid) if self.worker is not None else 0.0

    def redis_cpu(self) -> float:
        return cpu_seconds(self.redis_pid) if self.redis_pid else 0.0

    def redis_memory(self) -> int:
        if not self.redis_port:
            return 0
        out = subprocess.run(
            ["redis-cli", "-p", str(self.redis_port), "info", "memory"],
            capture_output=True,
            text=True,
        ).stdout
        return int(
            next(line.split(":")[1] for line in out.splitlines() if line.startswith("used_memory:"))
        )


@dataclass
class Target:
    label: str
    port: int
    path: str
    token: str | None
    tool: str
    hub: Hub | None = None
    sessions: list[McpSession] = field(default_factory=list)
    latencies: dict[int, list[float]] = field(default_factory=dict)
    elapsed: dict[int, float] = field(default_factory=dict)
    cpu: dict[int, float] = field(default_factory=dict)
    worker_cpu: dict[int, float] = field(default_factory=dict)
    redis_cpu: dict[int, float] = field(default_factory=dict)

    async def open(self, count: int) -> None:
        while len(self.sessions) < count:
            session = McpSession(self.port, self.path, self.token)
            await session.start()
            self.sessions.append(session)

    async def call(self, session: McpSession) -> None:
        result, _ = await session.rpc(
            "tools/call", {"name": self.tool, "arguments": {"text": "hello"}}
        )
        if result.get("isError") or result["content"][0].get("text") != "hello":
            raise RuntimeError(f"{self.label}: unexpected result {result}")


async def warm(target: Target, timeout: float = 90.0) -> None:
    """First calls start backends (and, in prod, wait for the pool worker)."""
    deadline = time.monotonic() + timeout
    await target.open(1)
    while True:
        try:
            await target.call(target.sessions[0])
            break
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)
    for _ in range(50):
        await target.call(target.sessions[0])


async def measure(target: Target, concurrency: int, calls: int) -> None:
    latencies: list[float] = []
    per = calls // concurrency

    async def run(session: McpSession) -> None:
        for _ in range(per):
            started = time.perf_counter()
            await target.call(session)
            latencies.append(time.perf_counter() - started)

    cpu0 = target.hub.cpu() if target.hub else 0.0
    rcpu0 = target.hub.redis_cpu() if target.hub else 0.0
    wcpu0 = target.hub.worker_cpu() if target.hub else 0.0
    started = time.perf_counter()
    await asyncio.gather(*(run(s) for s in target.sessions[:concurrency]))
    elapsed = time.perf_counter() - started
    target.latencies.setdefault(concurrency, []).extend(latencies)
    target.elapsed[concurrency] = target.elapsed.get(concurrency, 0.0) + elapsed
    if target.hub:
        target.cpu[concurrency] = target.cpu.get(concurrency, 0.0) + target.hub.cpu() - cpu0
        target.redis_cpu[concurrency] = (
            target.redis_cpu.get(concurrency, 0.0) + target.hub.redis_cpu() - rcpu0
        )
        target.worker_cpu[concurrency] = (
            target.worker_cpu.get(concurrency, 0.0) + target.hub.worker_cpu() - wcpu0
        )


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def bench_calls(targets: list[Target], calls: int, rounds: int, loads: list[float]) -> None:
    for target in targets:
        await target.open(max(CONCURRENCY))
    for concurrency in CONCURRENCY:
        per_round = max(concurrency, calls // rounds // concurrency * concurrency)
        for r in range(rounds):
            order = targets[r % len(targets) :] + targets[: r % len(targets)]
            for target in order:
                loads.append(load())
                await measure(target, concurrency, per_round)
        print(f"  tools/call c={concurrency} done (load {load():.2f})", flush=True)


async def bench_list(targets: list[Target], runs: int) -> dict[str, tuple[list[float], int, int]]:
    """tools/list latency per target, interleaved call by call."""
    results: dict[str, tuple[list[float], int, int]] = {}
    for target in targets:
        await target.open(1)
        result, size = await target.sessions[0].rpc("tools/list", {})
        results[target.label] = ([], size, len(result["tools"]))
    for _ in range(runs):
        for target in targets:
            started = time.perf_counter()
            result, _ = await target.sessions[0].rpc("tools/list", {})
            results[target.label][0].append(time.perf_counter() - started)
    return results


async def bench_sessions(hub: Hub, token: str, count: int, sse: bool) -> dict[str, float]:
    """Web RSS and Redis growth for `count` idle sessions, then with an open GET stream each."""
    path = "/mcp/bench-stdio/"
    await asyncio.sleep(1.0)
    rss0, redis0 = rss_bytes(hub.web.pid), hub.redis_memory()
    ids: list[str] = []

    async def initializer(n: int) -> None:
        session = McpSession(hub.port, path, token)
        await session.conn.open()
        for _ in range(n):
            ids.append(await session.initialize())
        session.close()

    workers = 8
    await asyncio.gather(
        *(initializer(count // workers + (1 if i < count % workers else 0)) for i in range(workers))
    )
    await asyncio.sleep(1.0)
    rss1, redis1 = rss_bytes(hub.web.pid), hub.redis_memory()
    figures = {
        "rss_kb": (rss1 - rss0) / count / 1024,
        "redis_kb": (redis1 - redis0) / count / 1024,
        "load": load(),
    }
    if not sse:
        return figures
    streams: list[HttpConnection] = []
    headers = {
        "Accept": "text/event-stream",
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": PROTOCOL,
    }
    for session_id in ids:
        conn = HttpConnection(hub.port)
        await conn.open()
        conn.send("GET", path, {**headers, "Mcp-Session-Id": session_id})
        streams.append(conn)
    # Count the streams that answered 200 (the response headers come with the stream's first
    # bytes), then measure.
    started = time.perf_counter()
    heads = await asyncio.gather(
        *(asyncio.wait_for(c.read_head(), 60) for c in streams), return_exceptions=True
    )
    opened = sum(1 for h in heads if isinstance(h, tuple) and h[0] == 200)
    figures["sse_seconds"] = time.perf_counter() - started
    figures["sse_timeouts"] = sum(
        1 for h in heads if isinstance(h, asyncio.TimeoutError | TimeoutError)
    )
    rss2, redis2 = rss_bytes(hub.web.pid), hub.redis_memory()
    figures.update(
        sse_open=opened,
        sse_rss_kb=(rss2 - rss1) / count / 1024,
        sse_redis_kb=(redis2 - redis1) / count / 1024,
    )
    for conn in streams:
        conn.close()
    await asyncio.sleep(2.0)
    return figures


# -- the run --------------------------------------------------------------------------------


def start_hub(
    mode: str,
    env: dict[str, str],
    procs: Processes,
    redis_pid: int | None,
    redis_port: int | None,
    root: Path = ROOT,
    server: str = "hub",
) -> Hub:
    port = free_port()
    if server == "hub":
        from tests.live_hub import web_command

        command = web_command(port)
    elif server == "uvicorn":
        # uvloop + httptools when importable (e.g. PYTHONPATH to a --target install), else asyncio + h11.
        command = [
            str(VENV_BIN / "uvicorn"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--lifespan",
            "off",
            "--no-access-log",
            "mcphub.asgi:application",
        ]
    else:
        command = [
            str(VENV_BIN / "daphne"),
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "mcphub.asgi:application",
        ]
    web = procs.spawn(f"{mode}-web", command, env, root)
    worker = None
    if mode in ("prod", "base"):
        from tests.live_hub import worker_command

        celery = worker_command("bench", "--loglevel", "WARNING")
        worker = procs.spawn(f"{mode}-worker", celery, env, root)
    return Hub(mode, port, web, worker, redis_pid, redis_port)


def run_seed(
    env: dict[str, str], echo_url: str, args: argparse.Namespace, root: Path = ROOT
) -> dict[str, Any]:
    command = [
        sys.executable,
        str(root / "benchmarks" / "gateway.py"),
        "--seed",
        echo_url,
        "--tools",
        str(args.tools),
        "--servers",
        str(args.servers),
    ]
    out = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"seeding failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


async def bench(args: argparse.Namespace) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    tmp = Path(tempfile.mkdtemp(prefix="mcphub-bench-"))
    procs = Processes(tmp)
    modes = args.modes.split(",")
    databases: list[str] = []
    print(f"gateway benchmark: logs in {tmp}; load {os.getloadavg()}", flush=True)
    try:
        echo_port, many_port = free_port(), free_port()
        procs.spawn("echo-http", [sys.executable, str(ECHO), "http", str(echo_port)], base_env())
        procs.spawn(
            "many-tools", [sys.executable, str(MANY), str(many_port), str(args.tools)], base_env()
        )
        echo_url = f"http://127.0.0.1:{echo_port}/mcp"
        hubs: dict[str, Hub] = {}
        seeds: dict[str, dict[str, Any]] = {}
        envs: dict[str, dict[str, str]] = {}
        roots = {"prod": ROOT, "embedded": ROOT}
        if args.baseline:
            modes.append("base")  # the production shape again, from the baseline's checkout
            roots["base"] = Path(args.baseline).resolve()
        redis: dict[str, tuple[int, int]] = {}  # production mode -> its redis-server (pid, port)
        for mode in ("prod", "base"):
            if mode not in modes:
                continue
            redis_port = free_port()
            server = procs.spawn(
                f"{mode}-redis",
                [
                    "redis-server",
                    "--port",
                    str(redis_port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ],
            )
            redis[mode] = (server.pid, redis_port)
            database = args.db if mode == "prod" else f"{args.db}_base"
            psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
            psql(f"CREATE DATABASE {database}")
            databases.append(database)
            envs[mode] = base_env(
                DATABASE_URL=f"{PG}/{database}",
                REDIS_URL=f"redis://127.0.0.1:{redis_port}/0",
                MCPHUB_DATA_DIR=str(tmp / f"{mode}-data"),
            )
            wait_port(redis_port, procs)
        if "embedded" in modes:
            envs["embedded"] = base_env(MCPHUB_DATA_DIR=str(tmp / "embedded-data"))
        wait_port(echo_port, procs)
        wait_port(many_port, procs)
        for mode, env in envs.items():
            seeds[mode] = run_seed(env, echo_url, args, roots[mode])
            redis_pid, redis_port = redis.get(mode, (None, None))
            server = args.base_server if mode == "base" else "hub"
            hubs[mode] = start_hub(mode, env, procs, redis_pid, redis_port, roots[mode], server)
        for hub in hubs.values():
            from tests.live_hub import wait_healthy

            wait_healthy(f"http://127.0.0.1:{hub.port}", procs.procs, timeout=90.0)
        print(
            f"hubs up: {', '.join(f'{m} :{h.port}' for m, h in hubs.items())}; seeded {seeds[modes[0]]['endpoints']}",
            flush=True,
        )

        direct = Target("direct → echo (HTTP)", echo_port, "/mcp", None, "echo")
        call_targets = [direct]
        for mode, hub in hubs.items():
            token = seeds[mode]["token"]
            call_targets.append(
                Target(
                    f"{mode} hub → echo (stdio)", hub.port, "/mcp/bench-stdio/", token, "echo", hub
                )
            )
            if not args.no_http_backend:
                call_targets.append(
                    Target(
                        f"{mode} hub → echo (HTTP)",
                        hub.port,
                        "/mcp/bench-http/",
                        token,
                        "echo",
                        hub,
                    )
                )
        list_targets = [Target("direct → many_tools backend", many_port, "/mcp", None, "")]
        list_targets += [
            Target(
                f"{mode} hub → bench-many",
                hub.port,
                "/mcp/bench-many/",
                seeds[mode]["token"],
                "",
                hub,
            )
            for mode, hub in hubs.items()
        ]
        for target in call_targets:
            await warm(target)
        await bench_list(
            list_targets, 3
        )  # builds the 1,000-tool views before any memory is measured

        memory: dict[str, dict[str, float]] = {}
        for mode, hub in hubs.items() if args.sessions else ():
            memory[mode] = await bench_sessions(
                hub, seeds[mode]["token"], args.sessions, not args.no_sse
            )
            print(f"  sessions {mode}: {memory[mode]}", flush=True)

        loads: list[float] = []
        await bench_calls(call_targets, args.calls, args.rounds, loads)
        list_loads = [load()]
        listing = await bench_list(list_targets, args.list_runs)
        list_loads.append(load())
        report(args, call_targets, loads, listing, list_loads, memory, hubs)
    finally:
        procs.stop()
        for database in databases:
            psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        if not args.keep_logs:
            shutil.rmtree(tmp, ignore_errors=True)


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def report(
    args: argparse.Namespace,
    targets: list[Target],
    loads: list[float],
    listing: dict[str, tuple[list[float], int, int]],
    list_loads: list[float],
    memory: dict[str, dict[str, float]],
    hubs: dict[str, Hub],
) -> None:
    print()
    print(
        f"tools/call of a trivial echo tool ({args.calls} calls per path and concurrency, {args.rounds} interleaved rounds)"
    )
    print(
        f"load average during the calls: min {min(loads):.2f}, median {statistics.median(loads):.2f}, max {max(loads):.2f} (2 cores)"
    )
    head = f"{'path':28}" + "".join(
        f" | c={c:<2} p50    p99   calls/s  cpu/call" for c in CONCURRENCY
    )
    print(head)
    print("-" * len(head))
    for t in targets:
        row = f"{t.label:28}"
        for c in CONCURRENCY:
            lat = t.latencies[c]
            cpu = f"{(t.cpu[c] + t.redis_cpu[c]) / len(lat) * 1000:5.2f}ms" if t.hub else "     -"
            row += f" | {pct(lat, 0.5):7.2f} {pct(lat, 0.99):6.2f} {len(lat) / t.elapsed[c]:8.0f}   {cpu}"
        print(row)
    print(
        "cpu/call = utime+stime of the hub's web + worker + redis-server processes ÷ calls (backends excluded)"
    )
    direct = targets[0]
    d50 = pct(direct.latencies[1], 0.5)
    d_tput = len(direct.latencies[32]) / direct.elapsed[32]
    print()
    print(f"direct → echo (HTTP): p50 {d50:.2f} ms at c=1, {d_tput:.0f} calls/s at c=32")
    print(
        f"{'vs direct':28} | overhead p50 c=1 (≤{TARGETS['overhead_ms']} ms) | throughput c=32 (≥{TARGETS['throughput_ratio']}×) "
        f"| hub cpu/call, all c (≤{TARGETS['cpu_ms']} ms) = web + worker + redis"
    )
    for t in targets[1:]:
        overhead = pct(t.latencies[1], 0.5) - d50
        ratio = len(t.latencies[32]) / t.elapsed[32] / d_tput
        calls = sum(len(v) for v in t.latencies.values())
        wcpu = sum(t.worker_cpu.values()) / calls * 1000
        web = sum(t.cpu.values()) / calls * 1000 - wcpu
        rcpu = sum(t.redis_cpu.values()) / calls * 1000
        cpu = web + wcpu + rcpu
        print(
            f"{t.label:28} | {overhead:+7.2f} ms  {verdict(overhead <= TARGETS['overhead_ms']):6}          "
            f"| {ratio:5.2f}×  {verdict(ratio >= TARGETS['throughput_ratio']):6}       "
            f"| {cpu:5.2f} ms  {verdict(cpu <= TARGETS['cpu_ms']):6} = {web:4.2f} + {wcpu:4.2f} + {rcpu:4.2f} ms"
        )
    print()
    print(
        f"tools/list of {args.tools} tools ({args.list_runs} interleaved calls each; load {list_loads[0]:.2f} → {list_loads[1]:.2f})"
    )
    base = None
    for label, (lat, size, count) in listing.items():
        p50 = pct(lat, 0.5)
        base = p50 if base is None else base
        note = (
            ""
            if label.startswith("direct")
            else f"  {p50 / base:5.2f}× direct  {verdict(p50 <= base)}"
        )
        print(
            f"  {label:32} {count:5} tools {size / 1024:7.0f} KB  p50 {p50:7.2f} ms  p99 {pct(lat, 0.99):7.2f} ms{note}"
        )
    print()
    print(
        f"memory per idle session ({args.sessions} sessions; target ≤ {TARGETS['session_kb']:.0f} KB)"
    )
    for mode, m in memory.items():
        total = m["rss_kb"] + m["redis_kb"]
        print(
            f"  {mode:9} initialized, idle:  web RSS {m['rss_kb']:6.2f} KB + redis {m['redis_kb']:6.2f} KB = {total:6.2f} KB/session"
            f"  {verdict(total <= TARGETS['session_kb'])}  (load {m['load']:.2f})"
        )
        if "sse_open" in m:
            total_sse = total + m["sse_rss_kb"] + m["sse_redis_kb"]
            print(
                f"  {mode:9} + open GET stream:  web RSS +{m['sse_rss_kb']:6.2f} KB + redis +{m['sse_redis_kb']:6.2f} KB"
                f" = {total_sse:6.2f} KB/session ({int(m['sse_open'])}/{args.sessions} streams answered 200 within"
                f" {m['sse_seconds']:.1f} s, {int(m['sse_timeouts'])} timed out)"
            )
    print(f"\nload average at the end: {os.getloadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--calls", type=int, default=2000, help="tools/call per path and concurrency"
    )
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument(
        "--sessions",
        type=int,
        default=1000,
        help="idle sessions for the memory figure (0: skip it)",
    )
    parser.add_argument("--list-runs", type=int, default=100)
    parser.add_argument("--tools", type=int, default=1000)
    parser.add_argument("--servers", type=int, default=20)
    parser.add_argument("--modes", default="prod,embedded")
    parser.add_argument(
        "--no-sse", action="store_true", help="skip the open-GET-stream memory figure"
    )
    parser.add_argument("--no-http-backend", action="store_true", help="only hub → stdio backend")
    parser.add_argument(
        "--quick", action="store_true", help="fewer calls and sessions, for a smoke run"
    )
    parser.add_argument("--keep-logs", action="store_true")
    parser.add_argument(
        "--db",
        default=BENCH_DB,
        help="the Postgres database to create for the production hub (dropped after)",
    )
    parser.add_argument(
        "--baseline",
        metavar="CHECKOUT",
        help="A/B: also run the production shape from this other checkout (same venv), interleaved"
        " with this one's as path 'base hub'; its own redis-server and database (DB_base)",
    )
    parser.add_argument(
        "--base-server",
        choices=("daphne", "uvicorn", "hub"),
        default="daphne",
        help="the HTTP server of the --baseline hub: daphne (a checkout from before mcphub/server.py),"
        " uvicorn's command line, or hub (python -m mcphub.server, as this checkout's hubs)",
    )
    parser.add_argument("--seed", metavar="ECHO_URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.seed:
        print(json.dumps(seed(args.seed, args.tools, args.servers)))
        return
    if args.quick:
        args.calls, args.rounds, args.sessions, args.list_runs = 320, 2, min(args.sessions, 200), 20
    asyncio.run(bench(args))


if __name__ == "__main__":
    main()
