"""Dispatch overhead of the Redis path (web → pool worker → web) for a trivial tool call.

    .venv/bin/python benchmarks/pool.py [--calls 2000] [--workers 1] [--redis-url URL]

Starts real pool-worker processes and compares, interleaved round by round, a RemotePool
call against the same call on an in-process Pool (both reach an identical stdio backend),
at concurrency 1, 8 and 32. Prints p50 / p99 latency and calls/s for each, and the p50
overhead the Redis path adds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from apps.connections.pool import Pool  # noqa: E402
from apps.connections.remote import RemotePool  # noqa: E402
from apps.connections.specs import ServerSpec  # noqa: E402

BACKEND = ServerSpec("bench", command=sys.executable, args=("-I", "-S", str(ROOT / "tests/servers/tiny.py")))
CONCURRENCY = (1, 8, 32)
ROUNDS = 4


def start_workers(count: int, redis_url: str, prefix: str) -> list[subprocess.Popen[bytes]]:
    command = [sys.executable, "-m", "apps.connections.worker", "--redis-url", redis_url, "--prefix", prefix]
    return [subprocess.Popen(command, cwd=ROOT, stderr=subprocess.DEVNULL) for _ in range(count)]


async def wait_for_workers(pool: RemotePool, count: int) -> None:
    for _ in range(300):
        if len(await pool._live_workers(refresh=True)) >= count:
            return
        await asyncio.sleep(0.1)
    raise SystemExit("pool workers did not register")


async def measure(pool: Pool | RemotePool, calls: int, concurrency: int) -> tuple[list[float], float]:
    latencies: list[float] = []
    per_task = calls // concurrency

    async def run() -> None:
        for _ in range(per_task):
            started = time.perf_counter()
            await pool.call_tool(BACKEND, "echo", {"text": "x"})
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(run() for _ in range(concurrency)))
    return latencies, time.perf_counter() - started


def summary(latencies: list[float], elapsed: float) -> tuple[float, float, float]:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered) * 1000, p99 * 1000, len(ordered) / elapsed


async def bench(calls: int, workers: int, redis_url: str) -> None:
    prefix = f"bench-{uuid.uuid4().hex[:6]}"
    procs = start_workers(workers, redis_url, prefix)
    try:
        async with Pool() as local, RemotePool(redis_url, prefix=prefix) as remote:
            await wait_for_workers(remote, workers)
            for pool in (local, remote):  # warm up: start the backends, fill caches
                await measure(pool, 200, 8)
            await report(local, remote, calls)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(15)


async def report(local: Pool, remote: RemotePool, calls: int) -> None:
    # Other load on a 2-core box moves these figures a lot; print it next to them.
    print(f"load average: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    print(f"{'path':<8}{'conc':>5}{'p50 ms':>9}{'p99 ms':>9}{'calls/s':>10}")
    for concurrency in CONCURRENCY:
        samples: dict[str, tuple[list[float], float]] = {"direct": ([], 0.0), "redis": ([], 0.0)}
        for _ in range(ROUNDS):  # interleaved, so machine noise hits both paths alike
            for name, pool in (("direct", local), ("redis", remote)):
                latencies, elapsed = await measure(pool, calls // ROUNDS, concurrency)
                samples[name] = (samples[name][0] + latencies, samples[name][1] + elapsed)
        rows = {name: summary(*values) for name, values in samples.items()}
        for name, (p50, p99, rate) in rows.items():
            print(f"{name:<8}{concurrency:>5}{p50:>9.3f}{p99:>9.3f}{rate:>10.0f}")
        print(f"{'':<8}{'':>5}  redis path adds {rows['redis'][0] - rows['direct'][0]:.3f} ms p50")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per path and concurrency level")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/15")
    args = parser.parse_args()
    asyncio.run(bench(args.calls, args.workers, args.redis_url))


if __name__ == "__main__":
    main()
