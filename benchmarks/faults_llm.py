"""The LLM side of the fault benchmark (benchmarks/faults.py --suite llm): runs and chat turns while
a part fails, as issue 27 measures them.

Each scenario starts N runs (or N chat turns) of R rounds against the scripted LLM answering in
1 s, each round one call of a side-effecting tool (benchmarks/servers/ledger.py over stdio, which
appends every call it receives to a ledger file), follows each on its WebSocket as the pages do
(reconnecting with `resume` after the last round / seq seen), injects the fault ~3 s in, and never
clicks anything: no resume, no re-send. Per scenario it prints
  affected     runs/turns not finished when the fault hit
  continued    of those, how many finished successfully without a person
  next round   seconds from the kill (an outage: from the part coming back) to the next round
               stored (runs) or tool result streamed (turns): p50 / max
  repeated     tool calls the backend received more than once (the ledger)
  lost / dup   step events (runs) or seq numbers (turns) the client never got / got twice
  stuck        not finished successfully when the deadline (2 min; --quick 45 s) passed
Scenarios (prod: web server + Celery worker(s) + Redis + Postgres; embedded: the web server alone):
  worker SIGKILL during runs / turns  the worker (embedded: the web server) killed, a new one started at
                                      once as a supervisor would
  2 workers, one SIGKILLed            prod; the live worker must take the work over
  SIGKILL with a 1-s call in flight   each round's tool call takes 1 s; the kill lands mid-call
  worker SIGTERM during runs          prod: drained, a replacement started; embedded: the web server
  LLM down 5 s                        the scripted LLM stopped and restarted on its port
  Redis restart                       prod: redis-server SIGKILLed, started again 2 s later
  runs right after mcp_enable         the tool enabled from the CLI, N runs started at once: runs
                                      that ran without it
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.gateway import (  # noqa: E402
    PG,
    Processes,
    base_env,
    free_port,
    psql,
    wait_port,
)
from tests.live_hub import web_command, worker_command  # noqa: E402

LEDGER_SERVER = ROOT / "benchmarks" / "servers" / "ledger.py"
LLM_DB = "mcphub_faults_llm"
REPLY_SECONDS = 1.0
BACK: dict[str, float] = {}  # an outage's fault sets "at": when the part came back


# -- seeding (a child process with the hub's environment) -----------------------------------------


def seed(spec: dict[str, str]) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from apps.accounts.models import User
    from apps.accounts.services import create_access_token
    from apps.catalog.introspection import apply_discovery
    from apps.catalog.models import McpServer
    from apps.connections.pool import Pool
    from apps.llm.models import Provider
    from apps.toolsets.services import enable_tools

    user = User.objects.create_user("faults", "faults@example.com", "unused-password-faults")
    server = McpServer.objects.create(
        name="ledger", command=sys.executable, args=[str(LEDGER_SERVER), spec["ledger"]]
    )

    async def discover() -> Any:
        async with Pool() as pool:
            return await pool.discover(server.to_spec())

    apply_discovery(server=server, discovery=asyncio.run(discover()))
    endpoint = user.endpoints.get()
    endpoint.approval = (
        "off"  # the model's calls run unasked: what the ledger counts is the hub's doing
    )
    endpoint.save()
    enable_tools(endpoint=endpoint, tools=server.tools.all())
    Provider.objects.create(
        name="scripted",
        kind="openai",
        base_url=spec["llm"],
        default_model="m",
        owner=user,
        is_default=True,
    )
    _, token = create_access_token(user=user, name="faults", rate_limit_per_minute=2_000_000_000)
    return {"token": token}


def responder(body: dict) -> Any:
    """The task (or message) `KEY:ROUNDS:SECONDS`: ROUNDS calls of `work`, then the answer."""
    from tests.llm_server import Reply

    messages = body["messages"]
    last = max(i for i, m in enumerate(messages) if m["role"] == "user")
    key, rounds, seconds = messages[last]["content"].split(":")
    done = sum(1 for m in messages[last:] if m["role"] == "tool")
    if done < int(rounds):
        arguments = {"key": f"{key}-r{done + 1}", "seconds": float(seconds)}
        return Reply(tool_calls=[(f"c{done}", "work", arguments)], delay=REPLY_SECONDS)
    return Reply(text=[f"done {key}"], delay=REPLY_SECONDS)


# -- the hub ----------------------------------------------------------------------------------------


@dataclass
class LlmHub:
    shape: str
    procs: Processes
    env: dict[str, str]
    port: int
    token: str
    web: subprocess.Popen[bytes]
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    redis: subprocess.Popen[bytes] | None = None
    redis_port: int | None = None
    spawned: int = 0

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def start_web(self) -> None:
        self.spawned += 1
        self.web = self.procs.spawn(
            f"{self.shape}-web{self.spawned}",
            web_command(self.port),
            self.env,
        )

    def start_worker(self) -> subprocess.Popen[bytes]:
        self.spawned += 1
        args = worker_command(f"llmfaults{self.spawned}", "--loglevel", "WARNING")
        worker = self.procs.spawn(f"{self.shape}-worker{self.spawned}", args, self.env)
        self.workers.append(worker)
        return worker

    def signal(self, proc: subprocess.Popen[bytes], how: signal.Signals) -> None:
        os.killpg(proc.pid, how)

    def forget(self, proc: subprocess.Popen[bytes]) -> None:
        proc.wait()
        self.procs.procs.remove(proc)
        if proc in self.workers:
            self.workers.remove(proc)

    def restart_redis(self, down: float) -> None:
        assert self.redis is not None and self.redis_port is not None
        os.killpg(self.redis.pid, signal.SIGKILL)
        self.forget(self.redis)
        time.sleep(down)
        self.redis = start_redis(self.procs, self.redis_port)


def start_redis(procs: Processes, port: int) -> subprocess.Popen[bytes]:
    proc = procs.spawn(
        f"redis-{time.monotonic():.0f}",
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        + ["--appendonly", "no"],
    )
    wait_port(port, procs)
    return proc


def start_hub(shape: str, procs: Processes, tmp: Path, llm_url: str, ledger: Path) -> LlmHub:
    from tests.live_hub import wait_healthy

    env = base_env(MCPHUB_DATA_DIR=str(tmp / f"llm-{shape}-data"), MCPHUB_EMBEDDED_BEAT="false")
    redis = redis_port = None
    if shape == "prod":
        redis_port = free_port()
        redis = start_redis(procs, redis_port)
        psql(f"DROP DATABASE IF EXISTS {LLM_DB} WITH (FORCE)")
        psql(f"CREATE DATABASE {LLM_DB}")
        env.update(DATABASE_URL=f"{PG}/{LLM_DB}", REDIS_URL=f"redis://127.0.0.1:{redis_port}/0")
    spec = json.dumps({"llm": llm_url, "ledger": str(ledger)})
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "faults.py"), "--seed-llm", spec],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"seeding failed:\n{out.stderr[-3000:]}")
    token = json.loads(out.stdout.strip().splitlines()[-1])["token"]
    hub = LlmHub(shape, procs, env, free_port(), token, None, redis=redis, redis_port=redis_port)  # type: ignore[arg-type]
    hub.start_web()
    if shape == "prod":
        hub.start_worker()
    wait_healthy(f"http://127.0.0.1:{hub.port}", procs.procs, timeout=90.0)
    return hub


# -- clients ----------------------------------------------------------------------------------------


@dataclass
class Followed:
    """One run or turn as its client saw it."""

    key: str
    ident: str = ""
    received: list[tuple[float, int]] = field(default_factory=list)  # (when, round or seq)
    ended: str = ""  # the `end` status, "" while none came
    ended_at: float = 0.0
    stored_rounds: list[int] = field(default_factory=list)  # runs: the steps in the database
    stored_at: list[float] = field(default_factory=list)  # runs: each step's created_at (epoch)
    with_tools: bool = True  # the model was offered the tool on its first request


class Clients:
    def __init__(self, hub: LlmHub) -> None:
        import aiohttp

        self.hub = hub
        self.http = aiohttp.ClientSession(
            headers={"Authorization": f"Bearer {hub.token}"},
            timeout=aiohttp.ClientTimeout(total=30),
            connector=aiohttp.TCPConnector(limit=0),
        )

    async def close(self) -> None:
        await self.http.close()

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        import aiohttp

        while True:  # the web process may be restarting (embedded faults)
            try:
                async with self.http.post(f"{self.hub.api}{path}", json=body) as response:
                    if response.status < 500:
                        return await response.json()
            except (OSError, TimeoutError, aiohttp.ClientError):
                pass
            await asyncio.sleep(0.2)

    async def start_run(self, item: Followed, task: str) -> None:
        item.ident = (await self._post("/runs/", {"task": task}))["id"]

    async def follow_run(self, item: Followed, deadline: float) -> None:
        """As static/js/runs.js: on each (re)connect, `resume` after the last round shown."""
        import aiohttp

        url = f"ws://127.0.0.1:{self.hub.port}/ws/runs/{item.ident}/"
        while time.monotonic() < deadline and not item.ended:
            last = max((r for _, r in item.received), default=0)
            try:
                async with self.http.ws_connect(url) as ws:
                    await ws.send_json({"type": "resume", "payload": {"after": last}})
                    while (event := await _next(ws, deadline)) is not None:
                        if event["type"] == "step":
                            item.received.append((time.time(), event["payload"]["round"]))
                        elif event["type"] == "end":
                            item.ended, item.ended_at = event["payload"]["status"], time.time()
                            return
            except (TimeoutError, OSError, TypeError, ValueError, aiohttp.ClientError):
                pass
            await asyncio.sleep(1.0)

    async def read_run(self, item: Followed) -> None:
        import aiohttp

        try:
            async with self.http.get(f"{self.hub.api}/runs/{item.ident}/") as response:
                run = await response.json()
        except (OSError, ValueError, TimeoutError, aiohttp.ClientError):
            return
        steps = run.get("steps") or []
        item.stored_rounds = [s["round"] for s in steps]
        item.stored_at = [datetime.fromisoformat(s["created_at"]).timestamp() for s in steps]
        if run.get("status") not in ("queued", "running", "waiting_approval") and not item.ended:
            item.ended, item.ended_at = run["status"], time.time()  # no `end` came: seen now

    async def turn(self, item: Followed, text: str, deadline: float) -> None:
        """Send the message, then follow the conversation as the chat page does."""
        import aiohttp

        conversation = (await self._post("/conversations/", {}))["id"]
        url = f"ws://127.0.0.1:{self.hub.port}/ws/chat/{conversation}/"
        sent = False
        while time.monotonic() < deadline and not item.ended:
            last = max((s for _, s in item.received), default=0)
            try:
                async with self.http.ws_connect(url) as ws:
                    if not sent:
                        await ws.send_json({"type": "message", "payload": {"text": text}})
                        sent = True
                    else:
                        await ws.send_json({"type": "resume", "payload": {"after": last}})
                    while (event := await _next(ws, deadline)) is not None:
                        if event.get("seq") is not None:
                            item.received.append((time.time(), event["seq"]))
                        if event["type"] == "tool_result":
                            item.stored_at.append(time.time())
                        if event["type"] == "end":
                            item.ended, item.ended_at = event["payload"]["status"], time.time()
                            return
            except (TimeoutError, OSError, TypeError, ValueError, aiohttp.ClientError):
                pass
            await asyncio.sleep(1.0)


async def _next(ws: Any, deadline: float) -> dict[str, Any] | None:
    """The socket's next JSON event; None once it closed or the deadline passed."""
    import aiohttp

    try:
        message = await asyncio.wait_for(ws.receive(), max(0.1, deadline - time.monotonic()))
    except TimeoutError:
        return None
    if message.type != aiohttp.WSMsgType.TEXT:
        return None
    return json.loads(message.data)


# -- measuring --------------------------------------------------------------------------------------


@dataclass
class Row:
    fault: str
    shape: str
    kind: str
    affected: int
    continued: int
    next_round: tuple[float, float] | None
    repeated: int
    lost: int
    duplicated: int
    stuck: int
    note: str = ""


def measure(
    name: str,
    hub: LlmHub,
    kind: str,
    items: list[Followed],
    fault_at: float,
    back_at: float | None,
    ledger: list[str],
    note: str,
) -> Row:
    good = "succeeded" if kind == "runs" else "complete"
    affected = [i for i in items if not i.ended or i.ended_at > fault_at]
    since = back_at or fault_at  # an outage: from the part coming back; a kill: from the kill
    gaps = []
    for item in affected:
        after = [t for t in item.stored_at if t > since]
        if after:
            gaps.append(min(after) - since)
    keys = Counter(k for k in ledger if k.split("-r")[0] in {i.key for i in items})
    lost = duplicated = 0
    for item in items:
        seen = Counter(n for _, n in item.received)
        duplicated += sum(c - 1 for c in seen.values())
        if kind == "runs":
            lost += len(set(item.stored_rounds) - set(seen))
        elif seen:
            lost += len(set(range(min(seen), max(seen) + 1)) - set(seen))
    return Row(
        name,
        hub.shape,
        kind,
        len(affected),
        sum(1 for i in affected if i.ended == good),
        (statistics.median(gaps), max(gaps)) if gaps else None,
        sum(c - 1 for c in keys.values()),
        lost,
        duplicated,
        sum(1 for i in items if i.ended != good),
        note,
    )


def read_ledger(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


async def scenario(
    hub: LlmHub,
    name: str,
    fault: Any,
    *,
    kind: str,
    count: int,
    rounds: int,
    seconds: float,
    deadline: float,
    ledger: Path,
    tag: str,
    fault_after: float = 3.0,
) -> Row:
    clients = Clients(hub)
    items = [Followed(f"{tag}{i}") for i in range(count)]
    end_by = time.monotonic() + fault_after + deadline
    try:
        if kind == "runs":
            await asyncio.gather(
                *(clients.start_run(i, f"{i.key}:{rounds}:{seconds:g}") for i in items)
            )
            follow = [clients.follow_run(i, end_by) for i in items]
        else:
            follow = [clients.turn(i, f"{i.key}:{rounds}:{seconds:g}", end_by) for i in items]
        following = asyncio.gather(*follow)
        await asyncio.sleep(fault_after)
        fault_at = time.time()
        note = await fault() or ""
        back_at = BACK.pop("at", None)
        await following
        if kind == "runs":
            await asyncio.gather(*(clients.read_run(i) for i in items))
            for item in items:  # leave nothing running into the next scenario
                if item.ended not in ("succeeded", "failed", "cancelled", "incomplete"):
                    await clients._post(f"/runs/{item.ident}/cancel/", {})
    finally:
        await clients.close()
    return measure(name, hub, kind, items, fault_at, back_at, read_ledger(ledger), note)


# -- the faults ---------------------------------------------------------------------------------------


def kill_and_replace(hub: LlmHub, how: signal.Signals, *, replace: bool = True) -> Any:
    async def fault() -> str:
        if hub.shape == "embedded":
            hub.signal(hub.web, how)
            await asyncio.to_thread(hub.forget, hub.web)
            hub.start_web()
            return "web server restarted at once"
        victim = hub.workers[0]
        hub.signal(victim, how)
        if replace:
            hub.start_worker()  # as a supervisor restarts it (for SIGTERM: a rolling restart)
        await asyncio.to_thread(hub.forget, victim)
        return "replacement started at once" if replace else "no replacement"

    return fault


def llm_down(llm: Any, seconds: float) -> Any:
    async def fault() -> str:
        llm.down()
        await asyncio.sleep(seconds)
        llm.up()
        BACK["at"] = time.time()
        return f"LLM back after {seconds:g} s"

    return fault


def redis_restart(hub: LlmHub, down: float) -> Any:
    async def fault() -> str:
        await asyncio.to_thread(hub.restart_redis, down)
        BACK["at"] = time.time()
        return f"Redis back after {down:g} s"

    return fault


async def after_mcp_enable(hub: LlmHub, llm: Any, count: int, deadline: float, ledger: Path) -> Row:
    """The tool disabled, then enabled from the CLI; `count` runs started the moment it returns."""

    def manage(*args: str) -> None:
        subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=hub.env,
            check=True,
            capture_output=True,
        )

    await asyncio.to_thread(manage, "mcp_enable", "--user", "faults", "--disable", "ledger.*")
    await asyncio.sleep(1.0)
    await asyncio.to_thread(manage, "mcp_enable", "--user", "faults", "ledger.*")
    first = len(llm.requests)
    row = await scenario(
        hub, "runs right after mcp_enable", _nothing, kind="runs", count=count, rounds=1,
        seconds=0, deadline=deadline, ledger=ledger, tag="enable", fault_after=0.0,
    )  # fmt: skip
    bare = sum(1 for body in llm.requests[first:] if not body.get("tools"))
    row.note = f"{bare} model requests without the tool"
    return row


async def _nothing() -> str:
    return ""


async def run_shape(shape: str, procs: Processes, tmp: Path, args: Any) -> list[Row]:
    from tests.llm_server import ScriptedLLM

    ledger = tmp / f"ledger-{shape}.txt"
    llm = ScriptedLLM().start()
    llm.responder = responder
    hub = start_hub(shape, procs, tmp, llm.url, ledger)
    print(f"llm faults, {shape}: hub on :{hub.port}", flush=True)
    count = 10 if args.quick else 20
    rounds = 4 if args.quick else 6
    deadline = 45.0 if args.quick else 120.0
    rows: list[Row] = []

    async def one(
        name: str, fault: Any, kind: str = "runs", seconds: float = 0.0, **kw: Any
    ) -> None:
        if args.only and not any(part in name for part in args.only.split(",")):
            return
        tag = f"s{len(rows)}x{kind[0]}"
        rows.append(
            await scenario(
                hub, name, fault, kind=kind, count=count, rounds=rounds, seconds=seconds,
                deadline=deadline, ledger=ledger, tag=tag, **kw,
            )
        )  # fmt: skip
        print(f"  {format_row(rows[-1])}", flush=True)

    try:
        await one("worker SIGKILL during runs", kill_and_replace(hub, signal.SIGKILL))
        await one("worker SIGKILL during turns", kill_and_replace(hub, signal.SIGKILL), "turns")
        await one(
            "SIGKILL with a 1-s call in flight",
            kill_and_replace(hub, signal.SIGKILL),
            seconds=1.0,
            fault_after=REPLY_SECONDS + 0.5,
        )
        await one("worker SIGTERM during runs", kill_and_replace(hub, signal.SIGTERM))
        if shape == "prod" and (not args.only or "2 workers" in args.only):
            hub.start_worker()  # two workers; one is killed and not replaced
            await asyncio.sleep(3.0)
            await one(
                "2 workers, one SIGKILLed", kill_and_replace(hub, signal.SIGKILL, replace=False)
            )
        await one("LLM down 5 s", llm_down(llm, 5.0))
        await one("LLM down 5 s", llm_down(llm, 5.0), "turns")
        if shape == "prod":
            await one("Redis restart (2 s down)", redis_restart(hub, 2.0))
            await one("Redis restart (2 s down)", redis_restart(hub, 2.0), "turns")
        if not args.only or "mcp_enable" in args.only:
            rows.append(await after_mcp_enable(hub, llm, count, deadline, ledger))
            print(f"  {format_row(rows[-1])}", flush=True)
    finally:
        llm.stop()
        for proc in [hub.web, *hub.workers]:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            if proc in procs.procs:
                procs.procs.remove(proc)
        if shape == "prod":
            psql(f"DROP DATABASE IF EXISTS {LLM_DB} WITH (FORCE)")
    return rows


HEAD = (
    f"{'fault':34} {'shape':8} {'kind':5} {'affected':>8} {'continued':>9} {'next round s':>13} "
    f"{'repeated':>8} {'lost':>4} {'dup':>4} {'stuck':>5}  note"
)


def format_row(row: Row) -> str:
    gap = "-" if row.next_round is None else f"{row.next_round[0]:.1f}/{row.next_round[1]:.1f}"
    return (
        f"{row.fault:34} {row.shape:8} {row.kind:5} {row.affected:8} {row.continued:9} {gap:>13} "
        f"{row.repeated:8} {row.lost:4} {row.duplicated:4} {row.stuck:5}  {row.note}"
    )


async def bench(shapes: list[str], procs: Processes, tmp: Path, args: Any) -> list[Row]:
    rows: list[Row] = []
    for shape in shapes:
        rows += await run_shape(shape, procs, tmp, args)
    return rows


def report(rows: list[Row], args: Any) -> None:
    print()
    print(
        f"LLM side: {10 if args.quick else 20} runs or turns per fault, {4 if args.quick else 6} rounds "
        f"each, LLM answering in {REPLY_SECONDS:g} s; next round = p50/max seconds from the kill or the "
        "part coming back; "
        f"stuck = not succeeded {45 if args.quick else 120} s after it"
    )
    print(HEAD)
    for row in rows:
        print(format_row(row))
