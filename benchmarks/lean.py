"""A/B of the pool's lean request path against the SDK client session, in one process.

    .venv/bin/python benchmarks/lean.py [--calls 400] [--rounds 3]

For each transport to tests/servers/echo.py (a stdio child, Streamable HTTP answering with
SSE, and with JSON bodies), two pools take raw `tools/call`s, interleaved round by round:
one with `lean_requests` (the default), one without (every request through the SDK's
`ClientSession`). A third HTTP path, a minimal raw HTTP/1.1 client (benchmarks/gateway.py's),
is the floor. Printed: p50 at concurrency 1, calls/s at 32, and this process's CPU per call
(the backends excluded). The load average is printed with them: on 2 cores it moves them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from apps.connections.pool import Pool, PoolOptions  # noqa: E402
from apps.connections.specs import ServerSpec  # noqa: E402
from benchmarks.gateway import McpSession  # noqa: E402
from tests.connections.test_http_transports import _serve  # noqa: E402

ECHO = ROOT / "tests" / "servers" / "echo.py"


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class RawClient:
    """The floor: benchmarks/gateway.py's raw client, one keep-alive session per concurrent caller."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.idle: list[McpSession] = []

    async def call_tool(
        self, spec: ServerSpec, name: str, arguments: dict[str, Any], raw: bool = True
    ) -> dict[str, Any]:
        session = self.idle.pop() if self.idle else None
        if session is None:
            session = McpSession(self.port, "/mcp", None)
            await session.start()
        result, _ = await session.rpc("tools/call", {"name": name, "arguments": arguments})
        self.idle.append(session)
        return result

    async def aclose(self) -> None:
        for session in self.idle:
            session.close()


async def measure(
    caller: Any, spec: ServerSpec, calls: int, concurrency: int
) -> tuple[list[float], float, float]:
    latencies: list[float] = []

    async def run() -> None:
        for _ in range(calls // concurrency):
            started = time.perf_counter()
            result = await caller.call_tool(spec, "echo", {"text": "hello"}, raw=True)
            assert result["content"][0]["text"] == "hello", result
            latencies.append(time.perf_counter() - started)

    cpu0, started = cpu(), time.perf_counter()
    await asyncio.gather(*(run() for _ in range(concurrency)))
    return latencies, time.perf_counter() - started, cpu() - cpu0


async def bench(args: argparse.Namespace) -> None:
    servers = {kind: _serve(kind) for kind in ("http", "http-json")}
    try:
        specs = {"stdio": ServerSpec("echo", command=sys.executable, args=(str(ECHO), "stdio"))}
        specs |= {
            kind: ServerSpec(
                "echo", transport="streamable_http", url=f"http://127.0.0.1:{port}/mcp"
            )
            for kind, (_, port) in servers.items()
        }
        paths: list[tuple[str, Any, ServerSpec]] = []
        for kind, spec in specs.items():
            paths.append((f"{kind} lean", Pool(), spec))
            paths.append((f"{kind} sdk", Pool(PoolOptions(lean_requests=False)), spec))
        paths.append(("http raw client (floor)", RawClient(servers["http"][1]), specs["http"]))
        for _, caller, spec in paths:
            for _ in range(50):
                await caller.call_tool(spec, "echo", {"text": "hello"}, raw=True)
        figures: dict[str, dict[int, list[tuple[list[float], float, float]]]] = {
            label: {1: [], 32: []} for label, _, _ in paths
        }
        loads = []
        for r in range(args.rounds):
            order = paths[r % len(paths) :] + paths[: r % len(paths)]
            for concurrency in (1, 32):
                for label, caller, spec in order:
                    loads.append(os.getloadavg()[0])
                    figures[label][concurrency].append(
                        await measure(caller, spec, args.calls, concurrency)
                    )
        print(
            f"raw tools/call of echo, {args.calls} calls per path, concurrency and round, {args.rounds} rounds"
        )
        print(
            f"load average: min {min(loads):.2f}, median {statistics.median(loads):.2f}, max {max(loads):.2f} (2 cores)"
        )
        print(f"{'path':26} | c=1 p50 ms  cpu ms/call | c=32 calls/s  cpu ms/call")
        for label, runs in figures.items():
            p50 = statistics.median(statistics.median(lat) for lat, _, _ in runs[1]) * 1000
            cpu1 = sum(c for _, _, c in runs[1]) / sum(len(lat) for lat, _, _ in runs[1]) * 1000
            rate = statistics.median(len(lat) / elapsed for lat, elapsed, _ in runs[32])
            cpu32 = sum(c for _, _, c in runs[32]) / sum(len(lat) for lat, _, _ in runs[32]) * 1000
            print(f"{label:26} | {p50:10.2f}  {cpu1:11.2f} | {rate:12.0f}  {cpu32:11.2f}")
        for _, caller, _ in paths:
            await caller.aclose()
    finally:
        for proc, _ in servers.values():
            proc.kill()
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
