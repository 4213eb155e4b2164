"""The chat's cost: hub overhead on time-to-first-token and per tool round, streamed chunks/s, and
100 concurrent conversations on one worker process.

    .venv/bin/python benchmarks/chat.py [--runs 30] [--conversations 100] [--rounds 5] [--quick]

One command starts what it measures, in production shape: its own redis-server, a fresh Postgres
database (`mcphub_bench_chat`, dropped after), the web server (mcphub/server.py), ONE Celery worker process (it runs every
turn on its chat loop and holds the MCP pool), the echo MCP server over stdio, and the scripted
LLM (tests/llm_server.py, OpenAI wire format) in this process. Measured:
  - time to first token: the first `text` event on the chat WebSocket after sending a message,
    vs the first text delta when this process calls the scripted LLM directly (same adapter);
  - per tool round: a turn of ROUNDS_TURN tool rounds minus a turn without any (so the turn's start
    and end cancel out), divided by the rounds, minus the tool's own time (the hub's `duration_ms` of
    each call, from the turn's events) and one direct LLM request (this process, same adapter);
  - streamed chunks/s: one reply of 5,000 chunks sent without delay, delivered in order;
  - concurrency: N conversations × R rounds (R-1 tool rounds) against an LLM that takes 1 s per
    reply, all at once, vs one conversation alone (target: ≤ 1.5× its wall time).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.gateway import (  # noqa: E402
    PG,
    Processes,
    base_env,
    cpu_seconds,
    free_port,
    psql,
    wait_port,
)
from tests.live_hub import web_command, worker_command  # noqa: E402

# Its own per run: helpers on one machine run this benchmark at once, and each drops its database.
BENCH_DB = f"mcphub_bench_chat_{os.getpid()}"
ECHO = ROOT / "tests" / "servers" / "echo.py"
STREAM_CHUNKS = 5000
ROUNDS_TURN = (
    10  # tool rounds in the turn that times one round (long, so noise per round stays small)
)
TARGETS = {"ttft_ms": 20.0, "round_ms": 10.0, "chunks_per_s": 2000.0, "concurrency_ratio": 1.5}


# -- seeding: a child process with the hub's environment ----------------------------------------


def seed(llm_url: str, hub_tools: bool = False) -> dict[str, Any]:
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

    user = User.objects.create_user("bench", "bench@example.com", "bench-password-unused")
    server = McpServer.objects.create(
        name="echo", command=sys.executable, args=[str(ECHO), "stdio"]
    )

    async def discover() -> Any:
        async with Pool() as pool:
            return await pool.discover(server.to_spec())

    apply_discovery(server=server, discovery=asyncio.run(discover()))
    endpoint = user.endpoints.get()
    endpoint.approval = "off"
    endpoint.save()
    enable_tools(endpoint=endpoint, tools=server.tools.filter(name="echo"))
    if hub_tools:  # the hub's own MCP tool that hands a task to a run (benchmarks/runs.py)
        from apps.gateway.hub_tools import ensure_hub_server

        enable_tools(
            endpoint=endpoint, tools=ensure_hub_server().tools.filter(name="autonomous_with_mcp")
        )
    Provider.objects.create(
        name="scripted",
        kind="openai",
        base_url=llm_url,
        default_model="m",
        owner=user,
        is_default=True,
    )
    _, token = create_access_token(user=user, name="benchmark", rate_limit_per_minute=2_000_000_000)
    return {"token": token, "endpoint": f"/mcp/{endpoint.slug}/"}


# -- the scripted LLM's answers, chosen by the user's message -----------------------------------


def responder(body: dict) -> Any:
    from tests.llm_server import Reply

    messages = body["messages"]
    last = max(i for i, m in enumerate(messages) if m["role"] == "user")
    done = sum(1 for m in messages[last:] if m["role"] == "tool")
    kind, _, rounds = messages[last]["content"].partition(":")
    if kind == "stream":
        return Reply(text=[f"{i} " for i in range(STREAM_CHUNKS)])
    delay = 1.0 if kind == "slow" else 0.0
    if done < int(rounds or 0) - 1:
        return Reply(tool_calls=[(f"c{done}", "echo", {"text": "x"})], delay=delay)
    return Reply(text=["hi"], delay=delay)


# -- clients --------------------------------------------------------------------------------------


class Chat:
    def __init__(self, hub: Hub) -> None:
        self.port, self.token, self.hub = hub.port, hub.token, hub

    async def conversation(self) -> str:
        import httpx2

        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.token}"}) as http:
            response = await http.post(f"http://127.0.0.1:{self.port}/api/conversations/", json={})
            return response.json()["id"]

    async def turn(self, conversation: str, text: str) -> dict[str, Any]:
        """Send one message; time to the first text event and to `end`; the text and event count."""
        import websockets

        url = f"ws://127.0.0.1:{self.port}/ws/chat/{conversation}/"
        async with websockets.connect(
            url, additional_headers={"Authorization": f"Bearer {self.token}"}, max_size=None
        ) as ws:
            started = time.perf_counter()
            await ws.send(json.dumps({"type": "message", "payload": {"text": text}}))
            first = None
            texts, events, seqs, tool_ms, tools = [], 0, [], 0.0, 0
            while True:
                event = json.loads(await asyncio.wait_for(ws.recv(), 120))
                events += 1
                seqs.append(event["seq"])
                if event["type"] == "text":
                    first = first or time.perf_counter()
                    texts.append(event["payload"]["text"])
                elif event["type"] == "tool_result":
                    tool_ms += event["payload"]["duration_ms"]
                    tools += 1
                elif event["type"] == "end":
                    ended, status = time.perf_counter(), event["payload"]["status"]
                    break
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), (
            "events out of order or repeated"
        )
        return {
            "ttft": (first - started) * 1000 if first else None,
            "total": (ended - started) * 1000,
            "first_to_end": (ended - (first or ended)),
            "text": "".join(texts),
            "events": events,
            "tool_ms": tool_ms,
            "tools": tools,
            "status": status,
        }


def configure_for_direct_calls() -> None:
    """This process calls the scripted LLM directly with the hub's adapter, which reads a few
    settings (their defaults): no database, no apps."""
    from django.conf import settings

    settings.configure()


async def direct_ttft(adapter: Any) -> tuple[float, float]:
    """(ms to the first text delta, ms to the end) calling the scripted LLM with the hub's adapter."""
    from apps.llm.types import Message, TextDelta

    started, first = time.perf_counter(), None
    async for event in adapter.stream(
        model="m", messages=[Message(role="user", text="ttft")], tools=[]
    ):
        if isinstance(event, TextDelta) and first is None:
            first = time.perf_counter()
    return (first - started) * 1000, (time.perf_counter() - started) * 1000


def others_cpu(redis_pid: int) -> dict[str, float]:
    postgres = 0.0
    for pid in Path("/proc").iterdir():
        if pid.name.isdigit():
            with contextlib.suppress(OSError):
                if (pid / "comm").read_text().strip() == "postgres":
                    postgres += cpu_seconds(int(pid.name))
    return {
        "clients+llm": time.process_time(),
        "postgres": postgres,
        "redis": cpu_seconds(redis_pid),
    }


def pushes(redis_pid: int) -> int:
    """RPUSHes the benchmark's redis-server has served so far: a tool call that goes through Redis
    is one RPUSH to its pool worker's inbox (apps.connections.remote); one that takes the
    same-process shortcut (a worker running a turn calls its own pool) is none."""
    import redis

    # redis-server retitles itself "redis-server 127.0.0.1:PORT" once started.
    title = Path(f"/proc/{redis_pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    port = int(re.search(r"(?:--port |:)(\d+)", title).group(1))
    stats = redis.Redis(port=port).info("commandstats")
    return stats.get("cmdstat_rpush", {}).get("calls", 0)


def cpu_ms_per(before: dict[str, float], after: dict[str, float], count: int) -> dict[str, float]:
    """CPU milliseconds each party spent per one of `count` (runs, rounds) between two Hub.cpu()."""
    return {party: (seconds - before[party]) * 1000 / count for party, seconds in after.items()}


def p50(values: list[float]) -> float:
    return statistics.median(values)


# -- the run --------------------------------------------------------------------------------------


async def measure(chat: Chat, llm_url: str, args: argparse.Namespace) -> dict[str, Any]:
    from apps.llm.adapters import adapter_class

    # One adapter, kept, as the worker keeps one per provider: both sides reuse their connection.
    direct_adapter = adapter_class("openai")(base_url=llm_url, api_key=None)
    try:
        return await _measure(chat, direct_adapter, args)
    finally:
        await direct_adapter.aclose()


async def _measure(chat: Chat, direct_adapter: Any, args: argparse.Namespace) -> dict[str, Any]:
    conversations = [await chat.conversation() for _ in range(max(args.conversations, 4))]
    for _ in range(3):  # warm: imports, the echo backend, connections
        await chat.turn(conversations[0], "tool:2")
        await direct_ttft(direct_adapter)
    hub_ttft, direct, direct_total, plain, tooled, tool_ms = [], [], [], [], [], []
    for _ in range(args.runs):
        timed = await chat.turn(conversations[1], "ttft")
        assert timed["ttft"] is not None, f"a turn ended {timed['status']} without any text"
        hub_ttft.append(timed["ttft"])
        first, total = await direct_ttft(direct_adapter)
        direct.append(first)
        direct_total.append(total)
        # Fresh conversations: both turns start from the same (empty) history.
        plain.append((await chat.turn(await chat.conversation(), "tool:1"))["total"])
        rounds = await chat.turn(await chat.conversation(), f"tool:{ROUNDS_TURN + 1}")
        assert rounds["tools"] == ROUNDS_TURN, rounds
        tooled.append(rounds["total"])
        tool_ms.append(rounds["tool_ms"] / ROUNDS_TURN)
    stream = await chat.turn(conversations[0], "stream")
    assert stream["text"] == "".join(f"{i} " for i in range(STREAM_CHUNKS)), (
        "streamed text lost or reordered"
    )
    alone = (await chat.turn(conversations[0], f"slow:{args.rounds}"))["total"] / 1000
    cpu, pushed = chat.hub.cpu(), pushes(chat.hub.redis_pid)
    started = time.perf_counter()
    results = await asyncio.gather(
        *(chat.turn(c, f"slow:{args.rounds}") for c in conversations[: args.conversations])
    )
    together = time.perf_counter() - started
    spent = cpu_ms_per(cpu, chat.hub.cpu(), args.conversations * args.rounds)
    pushed = pushes(chat.hub.redis_pid) - pushed
    assert all(r["text"] == "hi" for r in results), "a concurrent turn did not finish"
    return {
        "ttft_hub": p50(hub_ttft),
        "ttft_direct": p50(direct),
        "round": (p50(tooled) - p50(plain)) / ROUNDS_TURN - p50(tool_ms) - p50(direct_total),
        "tool_ms": p50(tool_ms),
        "llm_ms": p50(direct_total),
        "chunks_per_s": STREAM_CHUNKS / stream["first_to_end"],
        "stream_events": stream["events"],
        "alone": alone,
        "together": together,
        "cpu_per_round": spent,
        "tool_calls": sum(r["tools"] for r in results),
        "through_redis": pushed,
    }


def report(figures: dict[str, Any], args: argparse.Namespace) -> None:
    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    overhead = figures["ttft_hub"] - figures["ttft_direct"]
    ratio = figures["together"] / figures["alone"]
    print()
    print(
        f"chat benchmark (production shape, one worker process; load {os.getloadavg()[0]:.2f}, {args.runs} runs each)"
    )
    print(
        f"time to first token   hub {figures['ttft_hub']:.1f} ms p50, direct {figures['ttft_direct']:.1f} ms p50: "
        f"overhead {overhead:.1f} ms (target ≤ {TARGETS['ttft_ms']:.0f}: {verdict(overhead <= TARGETS['ttft_ms'])})"
    )
    print(
        f"per tool round        overhead {figures['round']:.1f} ms p50 beyond the tool's {figures['tool_ms']:.1f} ms and one "
        f"{figures['llm_ms']:.1f} ms LLM request ({ROUNDS_TURN}-round turn vs none; target ≤ {TARGETS['round_ms']:.0f}: "
        f"{verdict(figures['round'] <= TARGETS['round_ms'])})"
    )
    print(
        f"streaming             {figures['chunks_per_s']:.0f} chunks/s delivered in order ({STREAM_CHUNKS} chunks in "
        f"{figures['stream_events']} events; target ≥ {TARGETS['chunks_per_s']:.0f}: "
        f"{verdict(figures['chunks_per_s'] >= TARGETS['chunks_per_s'])})"
    )
    print(
        f"concurrency           {args.conversations} conversations × {args.rounds} rounds at 1 s per reply: "
        f"{figures['together']:.2f} s vs {figures['alone']:.2f} s alone = {ratio:.2f}× "
        f"(target ≤ {TARGETS['concurrency_ratio']}: {verdict(ratio <= TARGETS['concurrency_ratio'])})"
    )
    cpu = figures["cpu_per_round"]
    print(
        "                      CPU per round during it: "
        + ", ".join(f"{name} {ms:.1f} ms" for name, ms in cpu.items())
    )
    print(
        f"                      its {figures['tool_calls']} tool calls: {figures['through_redis']} went through "
        "Redis (RPUSH to a pool inbox), the others took the same-process shortcut"
    )


@contextlib.asynccontextmanager
async def production_hub(
    name: str,
    database: str,
    respond: Callable[[dict], Any],
    *,
    hub_tools: bool = False,
    **extra_env: str,
) -> AsyncIterator[Hub]:
    """The production shape on its own Redis and a fresh Postgres database, seeded for alice (with
    the hub's `autonomous_with_mcp` tool if `hub_tools`), with the scripted LLM answering by
    `respond`; logs are kept when something failed."""
    from tests.live_hub import wait_healthy
    from tests.llm_server import ScriptedLLM

    tmp = Path(tempfile.mkdtemp(prefix=f"mcphub-{name}-bench-"))
    procs = Processes(tmp)
    created_db = ok = False
    print(f"{name} benchmark: logs in {tmp}", flush=True)
    llm = ScriptedLLM().start()
    llm.responder = respond
    try:
        redis_port = free_port()
        procs.spawn(
            "redis",
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
        psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        psql(f"CREATE DATABASE {database}")
        created_db = True
        env = base_env(
            DATABASE_URL=f"{PG}/{database}",
            REDIS_URL=f"redis://127.0.0.1:{redis_port}/0",
            MCPHUB_DATA_DIR=str(tmp / "data"),
            MCPHUB_EMBEDDED_BEAT="false",
            **extra_env,
        )
        wait_port(redis_port, procs)
        out = subprocess.run(
            [sys.executable, __file__, "--seed", llm.url, *(["--hub-tools"] if hub_tools else [])],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            raise RuntimeError(f"seeding failed:\n{out.stderr[-3000:]}")
        seeded = json.loads(out.stdout.strip().splitlines()[-1])
        port = free_port()
        web = procs.spawn(
            "web",
            web_command(port),
            env,
        )
        worker = procs.spawn(
            "worker",
            worker_command(f"{name}bench", "--loglevel", "WARNING"),
            env,
        )
        wait_healthy(f"http://127.0.0.1:{port}", procs.procs, timeout=90.0)
        yield Hub(
            port, seeded["token"], web.pid, worker.pid, llm, procs.procs[0].pid, seeded["endpoint"]
        )
        ok = True
    finally:
        llm.stop()
        procs.stop()
        if created_db:
            psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        if ok:  # a failed run's logs stay, to read
            shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class Hub:
    port: int
    token: str
    web_pid: int
    worker_pid: int
    llm: Any
    redis_pid: int
    endpoint: str  # the MCP endpoint's path

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far of each party on the machine (they share its cores): the hub's web and
        worker, this process (the clients and the scripted LLM), Postgres (every backend) and Redis."""
        return {
            "web": cpu_seconds(self.web_pid),
            "worker": cpu_seconds(self.worker_pid),
            **others_cpu(self.redis_pid),
        }


async def bench(args: argparse.Namespace) -> None:
    async with production_hub("chat", args.db, responder) as hub:
        report(await measure(Chat(hub), hub.llm.url, args), args)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--quick", action="store_true", help="10 runs, 100 conversations × 3 rounds"
    )
    parser.add_argument("--db", default=BENCH_DB, help="Postgres database (created, dropped after)")
    parser.add_argument("--seed", help=argparse.SUPPRESS)
    parser.add_argument("--hub-tools", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.seed:
        print(json.dumps(seed(args.seed, args.hub_tools)))
        return
    if args.quick:
        args.runs, args.rounds = 10, 3
    configure_for_direct_calls()
    asyncio.run(bench(args))


if __name__ == "__main__":
    main()
