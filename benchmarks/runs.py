"""Autonomous runs: hub overhead per round, 100 concurrent runs on one worker process, and the
context (tokens sent) per round at rounds 10, 100 and 500 against the naive growing history.

    .venv/bin/python benchmarks/runs.py [--runs 100] [--rounds 3] [--long 500] [--quick]

One command starts what it measures, in production shape (as benchmarks/chat.py: its own
redis-server, a fresh Postgres database dropped after, the web server, ONE Celery worker process, the echo
MCP server over stdio, the scripted LLM in this process). Runs start through POST /api/runs/
and are followed on their WebSocket (/ws/runs/<id>/), as the Runs page follows them.
  - overhead per round: a 20-round run's wall time per round, minus one direct LLM request (the
    hub's own adapter, from this process) and the tool's own time (p50 of the steps' durations);
  - concurrency: N runs × R rounds against an LLM that takes 1 s per reply, all requested at once
    (N clients POSTing together), vs one run alone, each timed as a user sees it: from the first
    POST to the last run's `finished_at` (target: ≤ 1.5× one run's), with the CPU each party on the
    machine spent per run meanwhile (web, worker, Postgres, Redis, this process);
  - the same through the hub's own MCP tool, as MCP clients hand tasks over: N initialized MCP
    sessions each call `autonomous_with_mcp` (waiting, with a progress token) at once, timed from
    the first call until the last answer is back at its client, vs one call alone;
  - context: a long run whose every tool result is ~2,000 characters; the input tokens the model
    was sent at rounds 10/100/500 (the scripted LLM counts ~4 characters per token) vs the naive
    history rebuilt from the same steps without bounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.chat import (  # noqa: E402
    Hub,
    configure_for_direct_calls,
    cpu_ms_per,
    direct_ttft,
    production_hub,
)
from benchmarks.gateway import McpSession  # noqa: E402

# Its own per run: helpers on one machine run this benchmark at once, and each drops its database.
BENCH_DB = f"mcphub_bench_runs_{os.getpid()}"
TARGETS = {"round_ms": 10.0, "concurrency_ratio": 1.5}
BIG = "y" * 2000


def responder(body: dict) -> Any:
    """The task says what to do: `count:N` (N tool rounds), `slow:N` (1 s per reply), `big:N` (2 kB results)."""
    from tests.llm_server import Reply

    messages = body["messages"]
    task = next(m["content"] for m in messages if m["role"] == "user")
    kind, _, rounds = task.partition(":")
    if not rounds:
        return Reply(text=["hi"])  # the direct request that times the LLM alone
    rounds = int(rounds.split()[0])
    # Once rounds are left out of the context the tool results no longer count them: the last
    # assistant message's call id does.
    calls = [c for m in messages if m["role"] == "assistant" for c in (m.get("tool_calls") or [])]
    done = int(calls[-1]["id"][1:]) if calls else 0
    delay = 1.0 if kind == "slow" else 0.0
    if done < rounds:
        text = BIG if kind == "big" else "x"
        return Reply(tool_calls=[(f"c{done + 1}", "echo", {"text": text})], delay=delay)
    return Reply(text=["done"], delay=delay)


class Runs:
    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token
        self.api = f"http://127.0.0.1:{port}/api"
        self.headers = {"Authorization": f"Bearer {token}"}
        self._http: Any = None

    @property
    def http(self) -> Any:
        """One aiohttp session for every client: ~0.5 ms of this process's CPU per request where
        httpx cost ~2.3 ms, and this process shares the machine's two cores with the hub."""
        import aiohttp

        if self._http is None:
            self._http = aiohttp.ClientSession(
                headers=self.headers,
                timeout=aiohttp.ClientTimeout(total=120),
                connector=aiohttp.TCPConnector(limit=0),
            )
        return self._http

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()

    async def run(self, task: str, **limits: Any) -> dict[str, Any]:
        """Start a run, follow it to its end, then read it whole (with its steps)."""
        return await self.read(await self.follow(task, **limits))

    async def follow(self, task: str, **limits: Any) -> str:
        """Start a run and wait for its `end` as the Runs page does (static/js/runs.js): on the run's
        WebSocket, sending `resume` after round 0 so a run that ended before we listened still
        answers with its `end`. No API polling meanwhile: a hundred pollers were most of the web
        process's load, and the page does not poll."""
        async with self.http.post(f"{self.api}/runs/", json={"task": task, **limits}) as response:
            assert response.status == 201, await response.text()
            run_id = (await response.json())["id"]
        async with self.http.ws_connect(f"ws://127.0.0.1:{self.port}/ws/runs/{run_id}/") as ws:
            await ws.send_json({"type": "resume", "payload": {"after": 0}})
            while (event := await ws.receive_json(timeout=120))["type"] != "end":
                pass
        assert event["payload"]["status"] == "succeeded", event
        return run_id

    async def read(self, run_id: str) -> dict[str, Any]:
        async with self.http.get(f"{self.api}/runs/{run_id}/") as response:
            run = await response.json()
        assert run["status"] == "succeeded", run
        return run


async def via_mcp(hub: Hub, tasks: list[str]) -> tuple[float, dict[str, float]]:
    """Seconds from the first `autonomous_with_mcp` call until the last answer reached its client,
    and the CPU milliseconds each party spent per task meanwhile: one session per task, initialized
    before the clock starts (an MCP client connects once, then hands tasks over)."""
    sessions = [McpSession(hub.port, hub.endpoint, hub.token) for _ in tasks]
    try:
        await asyncio.gather(*(session.start() for session in sessions))
        listed, _ = await sessions[0].rpc("tools/list", {})
        name = next(t["name"] for t in listed["tools"] if t["name"].endswith("autonomous_with_mcp"))

        async def call(session: McpSession, n: int, task: str) -> None:
            arguments = {"mcp_name": "echo", "task": task}
            result, _ = await session.rpc(
                "tools/call", {"name": name, "arguments": arguments, "_meta": {"progressToken": n}}
            )
            assert not result["isError"] and result["structuredContent"]["status"] == "succeeded", (
                result
            )

        before, started = hub.cpu(), time.perf_counter()
        await asyncio.gather(
            *(
                call(session, n, task)
                for n, (session, task) in enumerate(zip(sessions, tasks, strict=True))
            )
        )
        return time.perf_counter() - started, cpu_ms_per(before, hub.cpu(), len(tasks))
    finally:
        for session in sessions:
            session.close()


def seconds_between(run: dict[str, Any]) -> float:
    from datetime import datetime

    return (
        datetime.fromisoformat(run["finished_at"]) - datetime.fromisoformat(run["started_at"])
    ).total_seconds()


def since(requested: float, runs: list[dict[str, Any]]) -> float:
    """Seconds from `requested` (time.time() before the first POST) to the last run's finish."""
    from datetime import datetime

    return max(datetime.fromisoformat(r["finished_at"]).timestamp() for r in runs) - requested


def naive_tokens(run: dict[str, Any], upto: int) -> int:
    """The input tokens of round `upto` had every earlier round been sent whole (the scripted
    LLM's count: ~4 characters of the JSON messages per token)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "x" * 180},
        {"role": "user", "content": run["task"]},
    ]
    for step in run["steps"][: upto - 1]:
        calls = step["tool_calls"]
        messages.append(
            {
                "role": "assistant",
                "content": step["text"],
                "tool_calls": [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                    }
                    for c in calls
                ],
            }
        )
        for c in calls:
            text = "\n".join(i.get("text", "") for i in c["result"].get("content", []))
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": text})
    return max(1, len(json.dumps(messages)) // 4)


async def measure(runs: Runs, hub: Hub, args: argparse.Namespace) -> dict[str, Any]:
    llm_url = hub.llm.url
    for _ in range(2):  # warm: imports, the echo backend, connections
        await runs.run("count:3")
    from apps.llm.adapters import adapter_class

    # One adapter, as the hub's run keeps one for all its rounds (a new one per request adds a TLS context).
    adapter = adapter_class("openai")(base_url=llm_url, api_key=None)
    try:
        direct = [(await direct_ttft(adapter))[1] for _ in range(10)]
    finally:
        await adapter.aclose()
    twenty = await runs.run("count:19")
    tool_ms = statistics.median(
        s["tool_calls"][0]["duration_ms"] for s in twenty["steps"] if s["tool_calls"]
    )
    per_round = seconds_between(twenty) * 1000 / twenty["rounds"]
    requested = time.time()
    alone = since(requested, [await runs.run(f"slow:{args.rounds - 1}")])
    before = hub.cpu()
    # Timed by the runs' own timestamps, from the first POST.
    requested = time.time()
    ids = await asyncio.gather(
        *(runs.follow(f"slow:{args.rounds - 1} #{i}") for i in range(args.runs))
    )
    spent = cpu_ms_per(before, hub.cpu(), args.runs)
    together_runs = [
        await runs.read(run_id) for run_id in ids
    ]  # after the timed part: timestamps, steps
    together = since(requested, together_runs)
    from datetime import datetime

    def at(run: dict[str, Any], field: str) -> datetime:
        return datetime.fromisoformat(run[field])

    first = datetime.fromtimestamp(requested, tz=at(together_runs[0], "created_at").tzinfo)
    waits = sorted(
        (at(r, "started_at") - at(r, "created_at")).total_seconds() for r in together_runs
    )
    created = max((at(r, "created_at") - first).total_seconds() for r in together_runs)
    durations = sorted(
        (at(r, "finished_at") - at(r, "started_at")).total_seconds() for r in together_runs
    )
    mcp_alone, _ = await via_mcp(hub, [f"slow:{args.rounds - 1}"])
    mcp_together, mcp_spent = await via_mcp(
        hub, [f"slow:{args.rounds - 1} #{i}" for i in range(args.runs)]
    )
    long = await runs.run(f"big:{args.long - 1}")
    marks = [n for n in (10, 100, 500) if n <= long["rounds"]]
    tokens = {
        n: (
            long["steps"][n - 1]["input_tokens"],
            naive_tokens(long, n),
            long["steps"][n - 1]["context_chars"],
        )
        for n in marks
    }
    return {
        "per_round": per_round,
        "direct": statistics.median(direct),
        "tool_ms": tool_ms,
        "overhead": per_round - statistics.median(direct) - tool_ms,
        "alone": alone,
        "together": together,
        "created_within": created,
        "queue_p50": statistics.median(waits),
        "queue_max": waits[-1],
        "duration_p50": statistics.median(durations),
        "duration_max": durations[-1],
        "cpu_per_run": spent,
        "mcp_alone": mcp_alone,
        "mcp_together": mcp_together,
        "mcp_cpu_per_run": mcp_spent,
        "tokens": tokens,
        "long_s": seconds_between(long),
        "long_rounds": long["rounds"],
    }


def report(figures: dict[str, Any], args: argparse.Namespace) -> None:
    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    ratio = figures["together"] / figures["alone"]
    print()
    print(f"runs benchmark (production shape, one worker process; load {os.getloadavg()[0]:.2f})")
    print(
        f"per round             {figures['per_round']:.1f} ms wall = LLM request {figures['direct']:.1f} ms + tool "
        f"{figures['tool_ms']:.1f} ms + hub {figures['overhead']:.1f} ms (target ≤ {TARGETS['round_ms']:.0f}: "
        f"{verdict(figures['overhead'] <= TARGETS['round_ms'])})"
    )
    print(
        f"concurrency           {args.runs} runs × {args.rounds} rounds at 1 s per reply: {figures['together']:.2f} s vs "
        f"{figures['alone']:.2f} s alone = {ratio:.2f}× (target ≤ {TARGETS['concurrency_ratio']}: "
        f"{verdict(ratio <= TARGETS['concurrency_ratio'])})"
    )
    print(
        f"                      all created within {figures['created_within']:.2f} s of the first POST; queued→started p50 "
        f"{figures['queue_p50']:.2f} s, max {figures['queue_max']:.2f} s; started→finished p50 {figures['duration_p50']:.2f} s, "
        f"max {figures['duration_max']:.2f} s"
    )
    print(
        f"                      CPU per run ({args.rounds} rounds) during it, the parties sharing the cores: "
        + ", ".join(f"{name} {ms:.1f} ms" for name, ms in figures["cpu_per_run"].items())
    )
    mcp_ratio = figures["mcp_together"] / figures["mcp_alone"]
    print(
        f"  via the MCP tool    {args.runs} autonomous_with_mcp calls at once: {figures['mcp_together']:.2f} s vs "
        f"{figures['mcp_alone']:.2f} s alone = {mcp_ratio:.2f}× (target ≤ {TARGETS['concurrency_ratio']}: "
        f"{verdict(mcp_ratio <= TARGETS['concurrency_ratio'])})"
    )
    print(
        "                      CPU per run during it (sessions opened before): "
        + ", ".join(f"{name} {ms:.1f} ms" for name, ms in figures["mcp_cpu_per_run"].items())
    )
    print(
        f"context               a {figures['long_rounds']}-round run with 2 kB tool results took {figures['long_s']:.1f} s"
    )
    for n, (sent, naive, chars) in figures["tokens"].items():
        print(
            f"  round {n:>4}: {sent:>7} tokens sent ({chars} characters of context) vs {naive:>8} naive"
        )


async def bench(args: argparse.Namespace) -> None:
    async with production_hub(
        "runs", BENCH_DB, responder, hub_tools=True, MCPHUB_MAX_SLOW_REQUESTS_PER_CLIENT="0"
    ) as hub:
        runs = Runs(hub.port, hub.token)
        try:
            report(await measure(runs, hub, args), args)
        finally:
            await runs.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--long",
        type=int,
        default=None,
        help="rounds of the context run (default 500; --quick 120)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="100 runs × 2 rounds, a 120-round long run"
    )
    args = parser.parse_args()
    if args.quick:
        args.rounds = 2
    args.long = args.long or (120 if args.quick else 500)
    configure_for_direct_calls()
    asyncio.run(bench(args))


if __name__ == "__main__":
    main()
