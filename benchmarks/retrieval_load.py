"""Does searching slow everyone else down? A `tools/call` timed on a hub that is idle and on the
same hub while 8 clients search a 500-tool catalog continuously (issue 29 item 5).

    .venv/bin/python benchmarks/retrieval_load.py [--modes embedded,prod] [--calls 300]
        [--rounds 4] [--searchers 8] [--tools 500] [--encoders 1,0] [--encoding]

One command starts what it measures: a hub (embedded: the web process alone, SQLite; prod: the web process + a
Celery worker + its own redis-server + a fresh Postgres database, dropped after), seeded with a
user, an endpoint holding the `echo` tool (stdio backend) and a dynamic endpoint whose catalog is
the first 500 distinct BFCL functions (catalog rows of a server never started: a search needs no
backend). Then, round by round so load drift hits both alike: `--calls` sequential tools/call of
echo on an idle hub, and the same with `--searchers` sessions each calling search_tools (BFCL
user questions, limit 10) back to back. Printed: tools/call p50/p95/p99 idle vs busy (target:
busy p99 within 10 % of idle), and search_tools latency p50/p95 seen by the searchers and alone
(one client, nothing else running; target at 500 tools: p50 ≤ 25 ms, p95 ≤ 60 ms), with the
machine's load average (on a shared 2-core box it moves every figure). `--encoders` runs the
whole measure once per MCPHUB_ENCODER_PROCESSES value (0: queries encoded in the web process's
search threads, as before; 1: in an encoder process, the default). `--encoding`: no hub, just
query encoding here vs through an encoder process, interleaved: wall time and the CPU the calling
thread spends (what would hold a web process's interpreter lock; barely moved by other load).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.gateway import (  # noqa: E402
    ECHO,
    PG,
    McpSession,
    Processes,
    base_env,
    free_port,
    load,
    pct,
    psql,
    start_hub,
    wait_port,
)

BENCH_DB = "mcphub_bench_search"


def seed(tools: int) -> dict[str, Any]:
    """Runs in a child process with the hub's environment."""
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
    from apps.toolsets.services import create_endpoint, set_enabled_tools, update_endpoint
    from benchmarks import retrieval_data

    user = User.objects.create_user("bench", "bench@example.com", "not-used-bench-password")
    echo = McpServer.objects.create(name="echo", command=sys.executable, args=[str(ECHO), "stdio"])

    async def discover() -> Any:
        async with Pool() as pool:
            return await pool.discover(echo.to_spec())

    apply_discovery(server=echo, discovery=asyncio.run(discover()))
    found, _ = retrieval_data.load()
    distinct = list({t.name: t for t in reversed(found)}.values())[::-1][:tools]
    bfcl = McpServer.objects.create(name="bfcl", command="/bin/false")
    Tool.objects.bulk_create(
        Tool(
            server=bfcl,
            name=t.name,
            description=t.description,
            input_schema=t.parameters,
            token_estimate=estimate_tokens(
                {"name": t.name, "description": t.description, "inputSchema": t.parameters}
            ),
        )
        for t in distinct
    )
    calls = create_endpoint(owner=user, name="bench-call", slug="bench-call")
    set_enabled_tools(endpoint=calls, tools=list(echo.tools.filter(name="echo")))
    search = create_endpoint(owner=user, name="bench-search", slug="bench-search")
    update_endpoint(endpoint=search, mode="dynamic")
    _, token = create_access_token(user=user, name="benchmark", rate_limit_per_minute=2_000_000_000)
    return {"token": token, "tools": Tool.objects.filter(available=True).count()}


def run_seed(env: dict[str, str], tools: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--seed", "--tools", str(tools)]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"seeding failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


async def echo_call(session: McpSession) -> float:
    started = time.perf_counter()
    result, _ = await session.rpc("tools/call", {"name": "echo", "arguments": {"text": "hello"}})
    if result.get("isError") or result["content"][0].get("text") != "hello":
        raise RuntimeError(f"unexpected echo result {result}")
    return time.perf_counter() - started


async def search(session: McpSession, query: str, found: list[int] | None = None) -> float:
    started = time.perf_counter()
    result, _ = await session.rpc(
        "tools/call", {"name": "search_tools", "arguments": {"query": query[:2000], "limit": 10}}
    )
    took = time.perf_counter() - started
    if result.get("isError"):
        raise RuntimeError(f"unexpected search result {str(result)[:300]}")
    if found is not None:
        found.append(len(result["structuredContent"]["tools"]))
    return took


async def measure(port: int, token: str, args: argparse.Namespace, queries: list[str]) -> None:
    caller = McpSession(port, "/mcp/bench-call/", token)
    await caller.start()
    searchers = [McpSession(port, "/mcp/bench-search/", token) for _ in range(args.searchers)]
    for s in searchers:
        await s.start()
    # Warm: the backend started, the catalog built and its vectors computed (a query no word of
    # which is indexed finds tools only by meaning, once the vectors are there).
    for _ in range(30):
        await echo_call(caller)
    deadline = time.monotonic() + 600
    while True:
        found: list[int] = []
        await search(searchers[0], "qqzx wvyk", found)
        if found[0] or time.monotonic() > deadline:
            break
        await asyncio.sleep(1)
    for q in queries[:20]:
        await search(searchers[0], q)

    idle: list[float] = []
    busy: list[float] = []
    searched: list[float] = []
    alone: list[float] = []
    picks = random.Random(29)
    for r in range(args.rounds):
        loads = [load()]
        for q in picks.sample(queries, min(len(queries), args.calls // 2)):
            alone.append(await search(searchers[0], q))
        for _ in range(args.calls):
            idle.append(await echo_call(caller))
        stop = asyncio.Event()

        async def keep_searching(session: McpSession, stop: asyncio.Event = stop) -> None:
            rng = random.Random(id(session))
            while not stop.is_set():
                searched.append(await search(session, rng.choice(queries)))

        tasks = [asyncio.create_task(keep_searching(s)) for s in searchers]
        await asyncio.sleep(0.5)  # every searcher under way
        for _ in range(args.calls):
            busy.append(await echo_call(caller))
        stop.set()
        await asyncio.gather(*tasks)
        loads.append(load())
        print(
            f"  round {r + 1}: idle p99 {pct(idle, 0.99):.1f} ms, busy p99 {pct(busy, 0.99):.1f} "
            f"ms, {len(searched)} searches so far (load {loads[0]:.1f}→{loads[1]:.1f})",
            flush=True,
        )
    for s in [caller, *searchers]:
        s.close()

    def row(label: str, values: list[float]) -> str:
        return (
            f"  {label:<40} n={len(values):<6} p50 {pct(values, 0.5):7.2f}  "
            f"p95 {pct(values, 0.95):7.2f}  p99 {pct(values, 0.99):7.2f} ms"
        )

    print(row("tools/call, hub idle", idle))
    print(row(f"tools/call, {args.searchers} clients searching", busy))
    print(row("search_tools alone (one client)", alone))
    print(row(f"search_tools, {args.searchers} clients at once", searched))
    ratio = pct(busy, 0.99) / pct(idle, 0.99)
    print(
        f"  busy/idle tools/call p99: {ratio:.2f} (target ≤ 1.10: "
        f"{'met' if ratio <= 1.10 else 'MISSED'}); search alone p50 {pct(alone, 0.5):.1f} ms "
        f"(≤ 25: {'met' if pct(alone, 0.5) <= 25 else 'MISSED'}), p95 {pct(alone, 0.95):.1f} ms "
        f"(≤ 60: {'met' if pct(alone, 0.95) <= 60 else 'MISSED'}); load {load():.1f}"
    )


def encoding(queries: list[str], runs: int) -> None:
    import statistics

    from apps.discovery import embeddings

    here, pool = embeddings.model(), embeddings.Processes(1)
    samples: dict[str, tuple[list[float], list[float]]] = {}
    try:
        for encoder in (here, pool):
            encoder.encode(["warm"], remember=False)
        for query in queries[:runs]:
            for label, encoder in (("in this process", here), ("in an encoder process", pool)):
                wall, cpu = time.perf_counter(), time.thread_time()
                encoder.encode([query[:2000]], remember=False)
                walls, cpus = samples.setdefault(label, ([], []))
                walls.append((time.perf_counter() - wall) * 1000)
                cpus.append((time.thread_time() - cpu) * 1000)
    finally:
        pool.close()
    for label, (walls, cpus) in samples.items():
        print(
            f"  query encoded {label:<22} wall p50 {statistics.median(walls):6.1f} p95 "
            f"{pct(walls, 0.95) / 1000:6.1f} ms; calling thread's CPU p50 {statistics.median(cpus):5.2f} ms"
        )
    print(f"  load {load():.1f}")


async def bench(args: argparse.Namespace) -> None:
    from benchmarks import retrieval_data

    _, found = retrieval_data.load()
    queries = [q.text for q in found if q.text.strip()]
    tmp = Path(tempfile.mkdtemp(prefix="mcphub-bench-search-"))
    procs = Processes(tmp)
    created_db = False
    print(f"search under load: logs in {tmp}; load {os.getloadavg()}", flush=True)
    try:
        for mode, encoders in (
            (m, e) for m in args.modes.split(",") for e in args.encoders.split(",")
        ):
            extra = {
                "MCPHUB_DATA_DIR": str(tmp / f"{mode}-{encoders}-data"),
                "MCPHUB_ENCODER_PROCESSES": encoders,
            }
            redis_pid = redis_port = None
            if mode == "prod":
                redis_port = free_port()
                redis = procs.spawn(
                    "redis",
                    ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1"]
                    + ["--save", "", "--appendonly", "no"],
                )
                redis_pid = redis.pid
                psql(f"DROP DATABASE IF EXISTS {args.db} WITH (FORCE)")
                psql(f"CREATE DATABASE {args.db}")
                created_db = True
                extra |= {
                    "DATABASE_URL": f"{PG}/{args.db}",
                    "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
                }
                wait_port(redis_port, procs)
            env = base_env(**extra)
            seeded = run_seed(env, args.tools)
            hub = start_hub(mode, env, procs, redis_pid, redis_port)
            from tests.live_hub import wait_healthy

            wait_healthy(f"http://127.0.0.1:{hub.port}", procs.procs, timeout=90.0)
            print(
                f"{mode} hub on :{hub.port}, {seeded['tools']} tools, "
                f"MCPHUB_ENCODER_PROCESSES={encoders}",
                flush=True,
            )
            await measure(hub.port, seeded["token"], args, queries)
    finally:
        procs.stop()
        if created_db:
            psql(f"DROP DATABASE IF EXISTS {args.db} WITH (FORCE)")
        if not args.keep_logs:
            shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--modes", default="embedded")
    parser.add_argument("--calls", type=int, default=300, help="tools/call per round and state")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--searchers", type=int, default=8)
    parser.add_argument("--tools", type=int, default=500)
    parser.add_argument("--encoders", default="1,0", help="MCPHUB_ENCODER_PROCESSES values")
    parser.add_argument("--db", default=BENCH_DB)
    parser.add_argument("--keep-logs", action="store_true")
    parser.add_argument("--encoding", action="store_true", help="query encoding alone, no hub")
    parser.add_argument("--seed", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.seed:
        print(json.dumps(seed(args.tools)))
        return
    if args.encoding:
        from benchmarks import retrieval_data

        _, found = retrieval_data.load()
        encoding([q.text for q in found if q.text.strip()], args.calls)
        return
    asyncio.run(bench(args))


if __name__ == "__main__":
    main()
