"""Cost of a trivial tool call through the pool: in-process `Pool` vs a worker by link and by Redis.

    .venv/bin/python benchmarks/pool.py [--calls 2000] [--workers 1] [--redis-url URL] [--raw]

Starts real pool-worker processes and measures, interleaved round by round so machine
noise hits every path alike, at concurrency 1, 8 and 32:

  pipe    a minimal asyncio JSON-RPC client on the backend's stdin/stdout (no SDK): the floor
  direct  `Pool.call_tool` in this process (the SDK client session per call)
  link    `RemotePool.call_tool` → its direct link → `PoolWorker` → `Pool` → backend, and back
  redis   the same with the link off (`direct=False`): RPUSH → the worker's inbox, PUBLISH back

Each path reaches its own copy of the same SDK-free stdio backend (tests/servers/tiny.py).
For each: p50 / p99 latency, calls/s, and CPU per call of the caller (this process),
the worker process(es) and redis-server (from INFO cpu), backend excluded. `--raw` makes
the pool paths ask for raw result dicts (what the gateway splices into its JSON reply).
The machine's load average is printed next to the figures: on a 2-core box it moves them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from apps.connections.pool import Pool  # noqa: E402
from apps.connections.remote import RemotePool  # noqa: E402
from apps.connections.specs import ServerSpec  # noqa: E402

TINY = str(ROOT / "tests/servers/tiny.py")
BACKEND = ServerSpec("bench", command=sys.executable, args=("-I", "-S", TINY))
CONCURRENCY = (1, 8, 32)
ROUNDS = 4
TICK = os.sysconf("SC_CLK_TCK")


class Pipe:
    """The floor: JSON lines to and from the backend, futures by id, nothing else."""

    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.next_id = 0
        self.reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-S", TINY, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self.reader = asyncio.create_task(self._read())
        await self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        )

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            msg = json.loads(line)
            future = self.pending.pop(msg.get("id"), None)
            if future is not None and not future.done():
                future.set_result(msg.get("result"))

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        assert self.proc is not None and self.proc.stdin is not None
        self.next_id += 1
        future = self.pending[self.next_id] = asyncio.get_running_loop().create_future()
        self.proc.stdin.write(
            json.dumps(
                {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
            ).encode()
            + b"\n"
        )
        return await future

    async def call_tool(
        self, spec: ServerSpec, name: str, arguments: dict[str, Any], **_: Any
    ) -> Any:
        return await self.request("tools/call", {"name": name, "arguments": arguments})

    async def aclose(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            await self.proc.wait()
        if self.reader is not None:
            self.reader.cancel()


def start_workers(count: int, redis_url: str, prefix: str) -> list[subprocess.Popen[bytes]]:
    command = [
        sys.executable,
        "-m",
        "apps.connections.worker",
        "--redis-url",
        redis_url,
        "--prefix",
        prefix,
    ]
    return [subprocess.Popen(command, cwd=ROOT, stderr=subprocess.DEVNULL) for _ in range(count)]


async def wait_for_workers(pool: RemotePool, count: int) -> None:
    for _ in range(300):
        if len(await pool._live_workers(refresh=True)) >= count:
            return
        await asyncio.sleep(0.1)
    raise SystemExit("pool workers did not register")


def proc_cpu(pid: int) -> float:
    """utime + stime of one process, seconds (fields 14 and 15 of /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Meter:
    """CPU seconds spent by the caller, the workers and redis-server since the last read."""

    def __init__(self, worker_pids: list[int], redis_url: str) -> None:
        self.worker_pids = worker_pids
        self.redis = redis.Redis.from_url(redis_url, socket_timeout=5)

    def read(self) -> tuple[float, float, float]:
        info = self.redis.info("cpu")
        return (
            time.process_time(),
            sum(proc_cpu(pid) for pid in self.worker_pids),
            float(info["used_cpu_user"]) + float(info["used_cpu_sys"]),
        )


async def measure(pool: Any, calls: int, concurrency: int, raw: bool) -> tuple[list[float], float]:
    latencies: list[float] = []
    per_task = calls // concurrency
    kwargs = {"raw": True} if raw and not isinstance(pool, Pipe) else {}

    async def run() -> None:
        for _ in range(per_task):
            started = time.perf_counter()
            await pool.call_tool(BACKEND, "echo", {"text": "x"}, **kwargs)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(run() for _ in range(concurrency)))
    return latencies, time.perf_counter() - started


async def bench(calls: int, workers: int, redis_url: str, raw: bool) -> None:
    prefix = f"bench-{uuid.uuid4().hex[:6]}"
    procs = start_workers(workers, redis_url, prefix)
    pipe = Pipe()
    try:
        await pipe.start()
        async with (
            Pool() as local,
            RemotePool(redis_url, prefix=prefix) as linked,
            RemotePool(redis_url, prefix=prefix, direct=False) as remote,
        ):
            await wait_for_workers(remote, workers)
            await wait_for_workers(linked, workers)
            paths = {"pipe": pipe, "direct": local, "link": linked, "redis": remote}
            for pool in paths.values():  # warm up: start the backends, fill caches
                await measure(pool, 400, 8, raw)
            await report(paths, calls, Meter([p.pid for p in procs], redis_url), raw)
    finally:
        await pipe.aclose()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(15)


async def report(paths: dict[str, Any], calls: int, meter: Meter, raw: bool) -> None:
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"load average before: {load}   (2 cores; raw results: {raw})")
    print(
        f"{'path':<8}{'conc':>5}{'p50 ms':>9}{'p99 ms':>9}{'calls/s':>10}"
        f"{'caller':>9}{'worker':>9}{'redis':>9}{'total':>9}  CPU ms/call"
    )
    for concurrency in CONCURRENCY:
        samples: dict[str, list[Any]] = {name: [[], 0.0, [0.0, 0.0, 0.0]] for name in paths}
        for _ in range(ROUNDS):  # interleaved, so machine noise hits every path alike
            for name, pool in paths.items():
                before = meter.read()
                latencies, elapsed = await measure(pool, calls // ROUNDS, concurrency, raw)
                after = meter.read()
                entry = samples[name]
                entry[0] += latencies
                entry[1] += elapsed
                entry[2] = [total + (a - b) for total, a, b in zip(entry[2], after, before)]
        p50s = {}
        for name, (latencies, elapsed, cpu) in samples.items():
            ordered = sorted(latencies)
            p50 = statistics.median(ordered) * 1000
            p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
            p50s[name] = p50
            per_call = [c / len(ordered) * 1000 for c in cpu]
            print(
                f"{name:<8}{concurrency:>5}{p50:>9.3f}{p99:>9.3f}{len(ordered) / elapsed:>10.0f}"
                + "".join(f"{c:>9.3f}" for c in per_call)
                + f"{sum(per_call):>9.3f}"
            )
        print(
            f"{'':<13}pool adds {p50s['direct'] - p50s['pipe']:.3f} ms p50 over the pipe; "
            f"a worker by link adds {p50s['link'] - p50s['direct']:.3f} ms over direct, "
            f"by Redis {p50s['redis'] - p50s['direct']:.3f} ms"
        )
    print(f"load average after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--calls", type=int, default=2000, help="calls per path and concurrency level"
    )
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/15")
    parser.add_argument("--raw", action="store_true", help="pool paths return raw result dicts")
    args = parser.parse_args()
    asyncio.run(bench(args.calls, args.workers, args.redis_url, args.raw))


if __name__ == "__main__":
    main()
