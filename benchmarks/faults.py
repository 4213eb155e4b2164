"""Fault tolerance under load: what callers of the tool-call path (`--suite calls`) and what runs and
chat turns (`--suite llm`, benchmarks/faults_llm.py) see when parts fail.

    .venv/bin/python benchmarks/faults.py [--suite calls,llm] [--shapes prod,embedded] [--callers 8]
                                          [--quick] [--keep-logs]

`--quick`: the LLM side only (unless --suite says otherwise), 10 runs or turns of 4 rounds per
fault and a 45 s deadline: a few minutes per shape.

One command starts everything: an echo backend over Streamable HTTP, stdio backends
(tests/servers/tiny.py, started `--stubborn`: they ignore stdin EOF and SIGTERM, so only a
parent-death signal or a group kill ends them), and the hub in each shape:
  prod      the web server + 3 Celery workers (each holding a pool) + its own redis-server on a free
            port + Postgres (a fresh `mcphub_faults` database, dropped after)
  embedded  the web server alone, SQLite in a temp dir, the pool in-process

8 callers (raw HTTP/1.1 keep-alive Streamable HTTP clients; a 404 for the session makes them
initialize again, as the spec says) call a tool in a loop while one fault happens:
  1 HTTP backend restart     the echo backend is killed and started again at once
  2 HTTP backend down 5 s    killed, started again 5 s later (the circuit breaker's case)
  2 start hangs              a stdio backend that never answers initialize until a file is
                             removed 8 s in (MCPHUB_CONNECT_TIMEOUT=4 for this run)
  3 worker SIGKILL / SIGTERM the Celery worker holding the backend (prod)
  5 Redis restart            redis-server SIGKILLed, started again 2 s later (prod)
  6 70 slow calls            70 calls of a 10 s tool in flight, callers use an instant tool of
                             the same backend (p50 / p99 of the instant calls)
  4 stop                     the hub stopped (SIGTERM) or killed (SIGKILL): backends left
Per fault it prints: calls, errors seen by callers (and HTTP 5xx other than 503), seconds from
the fault's end (backend / worker / Redis back) to the last failed call, calls over 5 s, and
backend processes left over after a stop or a kill.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.gateway import (  # noqa: E402
    ECHO,
    PG,
    PROTOCOL,
    HttpConnection,
    Processes,
    base_env,
    free_port,
    psql,
    rpc_message,
    wait_port,
)
from tests.live_hub import tagged_processes, web_command, worker_command  # noqa: E402

TINY = ROOT / "tests" / "servers" / "tiny.py"
FAULTS_DB = "mcphub_faults"
TAG = f"faults-{uuid.uuid4().hex[:8]}"  # in every backend's command line: how leftovers are counted


# -- seeding: runs in a child process with the hub's environment ----------------------------


def seed(spec: dict[str, str]) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from apps.accounts.models import User
    from apps.accounts.services import create_access_token
    from apps.catalog.models import McpServer, Tool
    from apps.toolsets.services import create_endpoint, set_enabled_tools

    user = User.objects.create_user("faults", "faults@example.com", secrets.token_urlsafe(12))
    tag = spec["tag"]

    def tiny(name: str, *flags: str) -> McpServer:
        args = ["-I", "-S", str(TINY), "--stubborn", "--tag", tag, *flags]
        return McpServer.objects.create(name=name, command=sys.executable, args=args)

    servers = {
        "f-http": McpServer.objects.create(
            name="echo-http", transport=McpServer.Transport.STREAMABLE_HTTP, url=spec["echo_url"]
        ),
        "f-hang": tiny("hang", "--silent", "--while", spec["hang_flag"]),
        "f-tiny": tiny("tiny"),
        "f-slow": McpServer.objects.create(
            name="echo-stdio", command=sys.executable, args=[str(ECHO), "stdio", "0", tag]
        ),
    }
    tools = {"f-http": ["echo"], "f-hang": ["echo"], "f-tiny": ["echo"], "f-slow": ["echo", "slow"]}
    for slug, server in servers.items():
        made = [
            Tool.objects.create(
                server=server, name=n, description=n, input_schema={"type": "object"}
            )
            for n in tools[slug]
        ]
        endpoint = create_endpoint(owner=user, name=slug, slug=slug)
        set_enabled_tools(endpoint=endpoint, tools=made, enforce_budget=False)
    _, token = create_access_token(user=user, name="faults", rate_limit_per_minute=2_000_000_000)
    return {"token": token}


# -- callers --------------------------------------------------------------------------------


@dataclass
class Call:
    started: float
    took: float
    ok: bool
    status: int  # HTTP status, 0 when the connection failed
    error: str = ""


@dataclass
class Caller:
    port: int
    path: str
    token: str
    tool: str
    arguments: dict[str, Any]
    calls: list[Call] = field(default_factory=list)
    conn: HttpConnection | None = None
    session: str | None = None

    @property
    def headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {self.token}",
        }
        if self.session:
            headers.update({"Mcp-Session-Id": self.session, "MCP-Protocol-Version": PROTOCOL})
        return headers

    async def _post(self, message: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        if self.conn is None:
            self.conn = HttpConnection(self.port)
        try:
            return await self.conn.request(
                "POST", self.path, self.headers, json.dumps(message).encode()
            )
        except (OSError, asyncio.IncompleteReadError):
            self.conn.close()
            self.conn = None
            return 0, {}, b""

    async def _initialize(self) -> int:
        params = {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "faults", "version": "1"},
        }
        self.session = None
        status, headers, _ = await self._post(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
        )
        if status == 200:
            self.session = headers["mcp-session-id"]
            await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return status

    async def call_once(self) -> Call:
        started = time.monotonic()
        status = 200 if self.session else await self._initialize()
        ok, error = False, f"HTTP {status}"
        if status == 200:
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": self.tool, "arguments": self.arguments},
            }
            status, headers, data = await self._post(body)
            error = f"HTTP {status}"
            if status == 404:
                self.session = (
                    None  # the hub forgot the session (Redis restarted): initialize again
                )
            elif status == 200:
                message = rpc_message(headers, data)
                ok = "result" in message and not message["result"].get("isError")
                error = (
                    ""
                    if ok
                    else json.dumps(
                        message.get("error") or message["result"]["content"][0].get("text")
                    )
                )
        call = Call(started, time.monotonic() - started, ok, status, error)
        self.calls.append(call)
        return call

    async def run(self, until: float) -> None:
        while time.monotonic() < until:
            if not (await self.call_once()).ok:
                await asyncio.sleep(0.02)  # a client retrying, not a tight loop

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


@dataclass
class Row:
    fault: str
    shape: str
    calls: int
    errors: int
    http_5xx: int
    recovery: float | None
    over_5s: int
    left: int | None = None
    note: str = ""


def summarize(
    fault: str,
    shape: str,
    calls: list[Call],
    back_at: float | None,
    note: str = "",
    left: int | None = None,
) -> Row:
    errors = [c for c in calls if not c.ok]
    if errors:
        common = Counter(c.error for c in errors).most_common(1)[0][0]
        note += f"; most common error: {common[:110]}"
    recovery = None
    if back_at is not None:
        late = [c.started + c.took for c in errors if c.started + c.took > back_at]
        recovery = max(late) - back_at if late else 0.0
    return Row(
        fault,
        shape,
        len(calls),
        len(errors),
        sum(1 for c in calls if c.status >= 500 and c.status != 503),
        recovery,
        sum(1 for c in calls if c.took > 5.0),
        left,
        note,
    )


# -- processes ------------------------------------------------------------------------------


def tagged() -> list[int]:
    return tagged_processes(TAG)


def children_of(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.update(int(c) for c in (task / "children").read_text().split())
    return found


def left_after(pids: set[int], seconds: float = 3.0) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and pids & set(tagged()):
        time.sleep(0.1)
    return len(pids & set(tagged()))


class EchoBackend:
    def __init__(self, procs: Processes) -> None:
        self.procs = procs
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        self.proc = self.procs.spawn(
            f"echo-http-{time.monotonic():.0f}",
            [sys.executable, str(ECHO), "http", str(self.port)],
            base_env(),
        )
        wait_port(self.port, self.procs)
        return time.monotonic()

    def kill(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.procs.procs.remove(self.proc)


@dataclass
class Hub:
    shape: str
    port: int
    web: subprocess.Popen[bytes]
    workers: list[subprocess.Popen[bytes]]
    env: dict[str, str]
    token: str = ""
    redis: subprocess.Popen[bytes] | None = None
    redis_port: int | None = None


def start_redis(procs: Processes, port: int) -> subprocess.Popen[bytes]:
    proc = procs.spawn(
        f"redis-{time.monotonic():.0f}",
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
    )
    wait_port(port, procs)
    return proc


def start_hub(shape: str, procs: Processes, tmp: Path, echo_url: str, hang_flag: Path) -> Hub:
    redis = redis_port = None
    env = base_env(
        MCPHUB_DATA_DIR=str(tmp / f"{shape}-data"),
        MCPHUB_CONNECT_TIMEOUT="4",
        MCPHUB_EMBEDDED_BEAT="false",
    )
    if shape == "prod":
        redis_port = free_port()
        redis = start_redis(procs, redis_port)
        psql(f"DROP DATABASE IF EXISTS {FAULTS_DB} WITH (FORCE)")
        psql(f"CREATE DATABASE {FAULTS_DB}")
        env.update(DATABASE_URL=f"{PG}/{FAULTS_DB}", REDIS_URL=f"redis://127.0.0.1:{redis_port}/0")
    command = [
        sys.executable,
        __file__,
        "--seed",
        json.dumps({"echo_url": echo_url, "hang_flag": str(hang_flag), "tag": TAG}),
    ]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"seeding failed:\n{out.stderr[-3000:]}")
    token = json.loads(out.stdout.strip().splitlines()[-1])["token"]
    port = free_port()
    web = procs.spawn(
        f"{shape}-web",
        web_command(port),
        env,
    )
    workers = [start_worker(procs, env, i) for i in range(3)] if shape == "prod" else []
    wait_port(port, procs, timeout=90)
    return Hub(shape, port, web, workers, env, token, redis, redis_port)


def start_worker(procs: Processes, env: dict[str, str], n: int) -> subprocess.Popen[bytes]:
    args = worker_command(f"faults{n}", "--loglevel", "WARNING")
    return procs.spawn(f"prod-worker{n}", args, env)


def holder_of(hub: Hub, server: str) -> subprocess.Popen[bytes]:
    """The Celery worker whose pool holds `server` (the same rendezvous choice the web makes)."""
    import redis

    from apps.connections.remote import _affinity
    from apps.connections.worker import DEFAULT_PREFIX, WORKER_TTL_SECONDS, workers_key

    client = redis.Redis(port=hub.redis_port)
    live = [
        w.decode()
        for w in client.zrangebyscore(
            workers_key(DEFAULT_PREFIX), time.time() - WORKER_TTL_SECONDS, "+inf"
        )
    ]
    client.close()
    chosen = max(live, key=lambda w: _affinity(w, server))
    pid = int(chosen.split(":")[1])
    return next(w for w in hub.workers if w.pid == pid)


def listed_workers(hub: Hub) -> int:
    import redis

    from apps.connections.worker import DEFAULT_PREFIX, workers_key

    client = redis.Redis(port=hub.redis_port)
    try:
        return client.zcard(workers_key(DEFAULT_PREFIX))
    finally:
        client.close()


# -- the faults -----------------------------------------------------------------------------


async def load(
    hub: Hub,
    slug: str,
    seconds: float,
    callers: int,
    tool: str = "echo",
    arguments: dict[str, Any] | None = None,
    during: Any = None,
) -> tuple[list[Call], Any]:
    """`callers` calling for `seconds`, while `during()` (a coroutine function) runs the fault."""
    group = [
        Caller(hub.port, f"/mcp/{slug}/", hub.token, tool, arguments or {"text": "hi"})
        for _ in range(callers)
    ]
    until = time.monotonic() + seconds
    runs = asyncio.gather(*(c.run(until) for c in group))
    result = await during() if during is not None else None
    await runs
    for caller in group:
        caller.close()
    return [call for c in group for call in c.calls], result


async def warm(hub: Hub, slug: str, tool: str = "echo", timeout: float = 60.0) -> None:
    caller = Caller(hub.port, f"/mcp/{slug}/", hub.token, tool, {"text": "warm"})
    deadline = time.monotonic() + timeout
    while not (await caller.call_once()).ok:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{hub.shape}: {slug} never answered")
        await asyncio.sleep(0.3)
    caller.close()


async def fault_http_restart(hub: Hub, echo: EchoBackend, callers: int, down: float) -> Row:
    await warm(hub, "f-http")

    async def fault() -> float:
        await asyncio.sleep(1.0)
        echo.kill()
        await asyncio.sleep(down)
        return await asyncio.to_thread(echo.start)

    calls, back_at = await load(hub, "f-http", 1.0 + down + 2.0 + 4.0, callers, during=fault)
    errors_back = sum(1 for c in calls if not c.ok and c.started > back_at)
    name = "1 HTTP backend restart" if down == 0 else f"2 HTTP backend down {down:g} s"
    return summarize(name, hub.shape, calls, back_at, f"{errors_back} errors after it was back")


async def fault_hanging_start(hub: Hub, hang_flag: Path, callers: int) -> Row:
    hang_flag.touch()

    async def fault() -> float:
        await asyncio.sleep(8.0)
        hang_flag.unlink()
        return time.monotonic()

    calls, fixed_at = await load(hub, "f-hang", 20.0, callers, during=fault)
    fast = sum(1 for c in calls if not c.ok and c.took < 1.0)
    return summarize(
        "2 start hangs (fixed at 8 s)",
        hub.shape,
        calls,
        fixed_at,
        f"{fast} errors answered in < 1 s",
    )


async def fault_worker(hub: Hub, procs: Processes, callers: int, how: signal.Signals) -> Row:
    await warm(hub, "f-tiny")
    victim = holder_of(hub, "tiny")
    backends = children_of(victim.pid) & set(tagged())

    async def fault() -> float:
        await asyncio.sleep(1.0)
        signalled = time.monotonic()
        victim.send_signal(how)
        await asyncio.to_thread(victim.wait, 30)
        exited.append(time.monotonic() - signalled)
        return time.monotonic()

    exited: list[float] = []
    calls, gone_at = await load(hub, "f-tiny", 6.0, callers, during=fault)
    hub.workers.remove(victim)
    procs.procs.remove(victim)
    left = left_after(backends)
    await asyncio.sleep(6.0)  # the registry forgets a dead worker after 5 s
    note = f"exited {exited[0]:.1f} s after the signal; {listed_workers(hub)} workers listed after (of {len(hub.workers)} alive)"
    return summarize(f"3 worker {how.name}", hub.shape, calls, gone_at, note, left)


async def fault_redis(hub: Hub, procs: Processes, callers: int) -> Row:
    await warm(hub, "f-tiny")

    async def fault() -> float:
        await asyncio.sleep(1.0)
        assert hub.redis is not None and hub.redis_port is not None
        os.killpg(hub.redis.pid, signal.SIGKILL)
        hub.redis.wait()
        procs.procs.remove(hub.redis)
        await asyncio.sleep(2.0)
        hub.redis = await asyncio.to_thread(start_redis, procs, hub.redis_port)
        return time.monotonic()

    calls, back_at = await load(hub, "f-tiny", 8.0, callers, during=fault)
    s503 = sum(1 for c in calls if c.status == 503)
    return summarize(
        "5 Redis restart (2 s down)",
        hub.shape,
        calls,
        back_at,
        f"{s503} answered 503 + Retry-After",
    )


def percentiles(calls: list[Call]) -> tuple[float, float]:
    took = sorted(c.took for c in calls)
    return took[len(took) // 2] * 1000, took[min(len(took) - 1, int(0.99 * len(took)))] * 1000


async def fault_slow_calls(hub: Hub, callers: int) -> Row:
    await warm(hub, "f-slow")
    quiet = percentiles(
        (await load(hub, "f-slow", 3.0, callers))[0]
    )  # the same calls without slow ones: this machine's floor
    slow = [Caller(hub.port, "/mcp/f-slow/", hub.token, "slow", {"seconds": 10}) for _ in range(70)]
    slow_runs = [asyncio.ensure_future(c.call_once()) for c in slow]
    await asyncio.sleep(
        2.5
    )  # 70 sessions initialized and their calls running, on a loaded 2-core box
    calls, _ = await load(hub, "f-slow", 5.0, callers)
    slow_calls = await asyncio.gather(*slow_runs)
    for caller in slow:
        caller.close()
    p50, p99 = percentiles(calls)
    slow_ok = sum(1 for c in slow_calls if c.ok)
    note = f"instant p50 {p50:.1f} ms, p99 {p99:.1f} ms (without slow calls: {quiet[0]:.1f} / {quiet[1]:.1f}); {slow_ok}/70 slow ok"
    row = summarize("6 instant tool vs 70 slow calls", hub.shape, calls, None, note)
    row.over_5s += sum(1 for c in slow_calls if c.took > 12.0)  # a slow call queued behind others
    return row


def stop_hub(hub: Hub, procs: Processes, how: signal.Signals) -> Row:
    backends = set(tagged())
    for proc in [hub.web, *hub.workers]:
        procs.procs.remove(proc)
        if proc.poll() is None:
            os.killpg(proc.pid, how)
    for proc in [hub.web, *hub.workers]:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    left = left_after(backends)
    return Row(
        f"4 hub {how.name}",
        hub.shape,
        0,
        0,
        0,
        None,
        0,
        left,
        f"{len(backends)} backends were running",
    )


async def run_shape(
    shape: str, procs: Processes, tmp: Path, echo: EchoBackend, callers: int
) -> list[Row]:
    hang_flag = tmp / f"{shape}-hang"
    hub = start_hub(shape, procs, tmp, echo.url, hang_flag)
    print(f"{shape}: hub on :{hub.port}", flush=True)
    rows = []
    try:
        for fault in (
            lambda: fault_http_restart(hub, echo, callers, 0.0),
            lambda: fault_http_restart(hub, echo, callers, 5.0),
            lambda: fault_hanging_start(hub, hang_flag, callers),
            lambda: fault_slow_calls(hub, callers),
        ):
            rows.append(await fault())
            print(f"  {format_row(rows[-1])}", flush=True)
        if shape == "prod":
            for fault in (
                lambda: fault_worker(hub, procs, callers, signal.SIGKILL),
                lambda: fault_worker(hub, procs, callers, signal.SIGTERM),
                lambda: fault_redis(hub, procs, callers),
            ):
                rows.append(await fault())
                print(f"  {format_row(rows[-1])}", flush=True)
        await warm(hub, "f-tiny")
        await warm(hub, "f-slow")
        rows.append(stop_hub(hub, procs, signal.SIGKILL if shape == "embedded" else signal.SIGTERM))
        print(f"  {format_row(rows[-1])}", flush=True)
    finally:
        for proc in [hub.web, *hub.workers]:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    return rows


HEAD = f"{'fault':32} {'shape':8} {'calls':>6} {'errors':>6} {'5xx':>4} {'recovery s':>10} {'>5 s':>5} {'left':>4}  note"


def format_row(row: Row) -> str:
    recovery = "-" if row.recovery is None else f"{row.recovery:.2f}"
    left = "-" if row.left is None else str(row.left)
    return f"{row.fault:32} {row.shape:8} {row.calls:6} {row.errors:6} {row.http_5xx:4} {recovery:>10} {row.over_5s:5} {left:>4}  {row.note}"


async def bench(args: argparse.Namespace) -> None:
    from benchmarks import faults_llm

    global FAULTS_DB
    if args.db:  # engineers benchmarking side by side each drop only their own databases
        FAULTS_DB, faults_llm.LLM_DB = args.db, f"{args.db}_llm"
    tmp = Path(tempfile.mkdtemp(prefix="mcphub-faults-"))
    procs = Processes(tmp)
    rows: list[Row] = []
    llm_rows: list[faults_llm.Row] = []
    suite = args.suite or ("llm" if args.quick else "calls,llm")
    print(f"fault benchmark: logs in {tmp}; load {os.getloadavg()}", flush=True)
    try:
        if "calls" in suite:
            echo = EchoBackend(procs)
            echo.start()
            for shape in args.shapes.split(","):
                rows += await run_shape(shape, procs, tmp, echo, args.callers)
        if "llm" in suite:
            llm_rows = await faults_llm.bench(args.shapes.split(","), procs, tmp, args)
    finally:
        procs.stop()
        if "prod" in args.shapes:
            database = {"calls": FAULTS_DB, "llm": faults_llm.LLM_DB}
            for part in suite.split(","):
                psql(f"DROP DATABASE IF EXISTS {database[part]} WITH (FORCE)")
        for pid in tagged():
            os.kill(pid, signal.SIGKILL)
        if not args.keep_logs:
            shutil.rmtree(tmp, ignore_errors=True)
    if rows:
        print()
        print(
            f"{args.callers} callers per fault; recovery = seconds from the part coming back to the last failed call"
        )
        print(HEAD)
        for row in rows:
            print(format_row(row))
    if llm_rows:
        faults_llm.report(llm_rows, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", default="prod,embedded")
    parser.add_argument("--callers", type=int, default=8)
    parser.add_argument("--suite", help="calls, llm or both (default: both; --quick: llm)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--only", default="", help="LLM side: the scenarios whose names contain one of these (a,b)"
    )
    parser.add_argument("--keep-logs", action="store_true")
    parser.add_argument(
        "--db", default="", help=f"Postgres database (and NAME_llm); default {FAULTS_DB}"
    )
    parser.add_argument("--seed", help=argparse.SUPPRESS)
    parser.add_argument("--seed-llm", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.seed:
        print(json.dumps(seed(json.loads(args.seed))))
        return
    if args.seed_llm:
        from benchmarks.faults_llm import seed as seed_llm

        print(json.dumps(seed_llm(json.loads(args.seed_llm))))
        return
    asyncio.run(bench(args))


if __name__ == "__main__":
    main()
