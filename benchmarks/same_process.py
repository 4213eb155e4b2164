"""The same-process shortcut: a tool call from a process that also runs the server's pool worker.

    .venv/bin/python benchmarks/same_process.py [--calls 1000] [--rounds 6] [--redis-url URL]

The shape of a Celery worker in production running a chat turn or a run: a `PoolWorker` on its
own thread and loop (as `celery_hooks` starts it), and the turn's loop calling through
`RemotePool`. Two pools, interleaved round by round with the order rotating: `here`
(`same_process=True`, what `get_pool()` builds: the call goes to the worker's pool directly,
hopping loops) and `redis` (`same_process=False`: RPUSH to the worker's inbox, PUBLISH back,
as before). Both reach the same backend, the SDK-free stdio server (tests/servers/tiny.py), so
the difference is the hub's path. Printed: p50 / p99 at concurrency 1, calls/s at 16, and this
process's CPU per call (caller and worker; redis-server's own CPU is not counted, which
flatters `redis`), with the load average.

Measured (2 shared cores at load ~10.5, 6 rounds of 1,000 calls; two runs):
    here    p50 0.31 / 0.21 ms, CPU 0.26 / 0.20 ms per call, 3,228 / 2,952 calls/s at 16
    redis   p50 0.48 / 0.47 ms, CPU 0.36 / 0.35 ms per call, 2,073 / 2,356 calls/s at 16
i.e. ~0.2 ms and ~0.1 ms of this process's CPU less per tool call, plus redis-server's share.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from apps.connections.celery_hooks import PoolWorkerThread  # noqa: E402
from apps.connections.remote import RemotePool  # noqa: E402
from apps.connections.specs import ServerSpec  # noqa: E402

TINY = ROOT / "tests" / "servers" / "tiny.py"


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(
    pool: RemotePool, spec: ServerSpec, calls: int, concurrency: int
) -> tuple[list[float], float, float]:
    latencies: list[float] = []

    async def run() -> None:
        for _ in range(calls // concurrency):
            started = time.perf_counter()
            result = await pool.call_tool(spec, "echo", {"text": "hello"}, raw=True)
            assert result["content"][0]["text"] == "hello", result
            latencies.append(time.perf_counter() - started)

    cpu0, started = cpu(), time.perf_counter()
    await asyncio.gather(*(run() for _ in range(concurrency)))
    return latencies, time.perf_counter() - started, cpu() - cpu0


async def bench(args: argparse.Namespace, prefix: str) -> None:
    spec = ServerSpec("tiny", command=sys.executable, args=("-I", "-S", str(TINY)))
    paths = {
        "here": RemotePool(args.redis_url, prefix=prefix, same_process=True),
        "redis": RemotePool(args.redis_url, prefix=prefix, same_process=False),
    }
    for _ in range(200):  # the worker registers in Redis a moment after its thread starts
        if await paths["redis"]._live_workers(refresh=True):
            break
        await asyncio.sleep(0.05)
    for pool in paths.values():
        for _ in range(200):
            await pool.call_tool(spec, "echo", {"text": "hello"}, raw=True)
    figures: dict[str, dict[int, list[tuple[list[float], float, float]]]] = {
        label: {1: [], 16: []} for label in paths
    }
    loads = []
    labels = list(paths)
    for r in range(args.rounds):
        order = labels[r % 2 :] + labels[: r % 2]
        for concurrency in (1, 16):
            for label in order:
                loads.append(os.getloadavg()[0])
                figures[label][concurrency].append(
                    await measure(paths[label], spec, args.calls, concurrency)
                )
    print(
        f"raw tools/call of tiny (stdio), {args.calls} calls per path and round, {args.rounds} rounds"
    )
    print(
        f"load average: min {min(loads):.2f}, median {statistics.median(loads):.2f}, "
        f"max {max(loads):.2f} (2 cores)"
    )
    print(f"{'path':6} | c=1 p50 ms  p99 ms  cpu ms/call | c=16 calls/s  cpu ms/call")
    for label, runs in figures.items():
        p50 = statistics.median(statistics.median(lat) for lat, _, _ in runs[1]) * 1000
        p99 = (
            statistics.median(statistics.quantiles(lat, n=100)[98] for lat, _, _ in runs[1]) * 1000
        )
        cpu1 = sum(c for _, _, c in runs[1]) / sum(len(lat) for lat, _, _ in runs[1]) * 1000
        rate = statistics.median(len(lat) / elapsed for lat, elapsed, _ in runs[16])
        cpu16 = sum(c for _, _, c in runs[16]) / sum(len(lat) for lat, _, _ in runs[16]) * 1000
        print(f"{label:6} | {p50:10.3f} {p99:7.3f}  {cpu1:11.3f} | {rate:12.0f}  {cpu16:11.3f}")
    for pool in paths.values():
        await pool.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/15")
    args = parser.parse_args()
    prefix = f"bench-here:{uuid.uuid4().hex[:8]}"
    worker = PoolWorkerThread(args.redis_url, {"redis_prefix": prefix})
    worker.start()
    try:
        asyncio.run(bench(args, prefix))
    finally:
        worker.stop()


if __name__ == "__main__":
    main()
