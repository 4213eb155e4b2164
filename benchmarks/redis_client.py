"""The hot path's Redis client, A/B: `apps.connections.resp` vs redis-py (with the hiredis parser).

    .venv/bin/python benchmarks/redis_client.py [--calls 4000] [--rounds 4]

One command: it starts its own redis-server on a free port (the shared one's CPU figures
would include other users) and two echo-worker processes, one per client. Each worker does
what `PoolWorker` does per call, with its client: BLMPOP on its inbox (batch of up to 128),
json-decode, PUBLISH the reply on the caller's channel without waiting (in order, on one
connection), and a ZADD heartbeat every 0.25 s. The caller side does what `RemotePool` does:
RPUSH the request (awaiting Redis's reply) and resolve the call's future from the pub/sub
message on its reply channel. Paths are measured interleaved round by round, so machine
noise hits both alike:

  resp      the hand-written pipelined client (apps/connections/resp.py)
  redispy   redis-py's asyncio client: a blocking connection pool for RPUSH, `PubSub` for the
            replies, one connection blocked in BLMPOP, a writer task PUBLISHing queued replies
            through a non-transactional pipeline (ordered, one connection, no waiting per reply)

Printed per path: p50 / p99 of a call at concurrency 1 and 32, calls/s, and CPU ms per call of
the caller (this process), the worker process and redis-server, with the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402
import redis.asyncio as aioredis  # noqa: E402
from redis.utils import HIREDIS_AVAILABLE  # noqa: E402

from apps.connections.resp import RespClient, RespConnection  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
CLIENTS = ("resp", "redispy")
HEARTBEAT = 0.25
BATCH = 128


# -- workers (child processes) ----------------------------------------------------------------


async def serve_resp(url: str, prefix: str) -> None:
    out = RespClient(url)
    inbox = await RespConnection.open(url)

    async def beat() -> None:
        while True:
            await out.call("ZADD", f"{prefix}:workers", time.time(), "resp")
            await asyncio.sleep(HEARTBEAT)

    heartbeat = asyncio.create_task(beat())
    while True:
        item = await inbox.call("BLMPOP", 1, 1, f"{prefix}:inbox", "LEFT", "COUNT", BATCH)
        for raw in item[1] if item else ():
            msg = json.loads(raw)
            await out.fire(
                "PUBLISH", msg["r"], json.dumps({"t": "res", "id": msg["id"], "ok": msg["a"]})
            )
    heartbeat.cancel()


async def serve_redispy(url: str, prefix: str) -> None:
    out = aioredis.Redis.from_url(url, socket_timeout=None)
    inbox = aioredis.Redis.from_url(url, socket_timeout=None, single_connection_client=True)
    queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()

    async def writer() -> None:  # fire(): ordered, one connection, the worker never waits
        while True:
            items = [await queue.get()]
            while not queue.empty():
                items.append(queue.get_nowait())
            pipe = out.pipeline(transaction=False)
            for channel, data in items:
                pipe.publish(channel, data)
            await pipe.execute()

    async def beat() -> None:
        while True:
            await out.zadd(f"{prefix}:workers", {"redispy": time.time()})
            await asyncio.sleep(HEARTBEAT)

    tasks = [asyncio.create_task(writer()), asyncio.create_task(beat())]
    while True:
        item = await inbox.execute_command(
            "BLMPOP", 1, 1, f"{prefix}:inbox", "LEFT", "COUNT", BATCH
        )
        for raw in item[1] if item else ():
            msg = json.loads(raw)
            queue.put_nowait((msg["r"], json.dumps({"t": "res", "id": msg["id"], "ok": msg["a"]})))
    del tasks


# -- callers (this process) -------------------------------------------------------------------


class RespCaller:
    def __init__(self, url: str, prefix: str) -> None:
        self.url, self.inbox, self.channel = (
            url,
            f"{prefix}:inbox",
            f"{prefix}:reply:{uuid.uuid4().hex[:8]}",
        )
        self.pending: dict[str, asyncio.Future[Any]] = {}
        self.ids = 0

    async def start(self) -> None:
        self.client = RespClient(self.url)
        self.sub = await RespConnection.open(self.url, on_push=self._on_push)
        await self.sub.subscribe(self.channel)

    def _on_push(self, channel: bytes, data: bytes) -> None:
        msg = json.loads(data)
        future = self.pending.pop(msg["id"], None)
        if future is not None:
            future.set_result(msg["ok"])

    async def call(self) -> Any:
        self.ids += 1
        request_id = str(self.ids)
        future = self.pending[request_id] = asyncio.get_running_loop().create_future()
        await self.client.call(
            "RPUSH", self.inbox, json.dumps({"id": request_id, "r": self.channel, "a": {"x": 1}})
        )
        return await future

    async def aclose(self) -> None:
        self.sub.close()
        await self.client.aclose()


class RedispyCaller(RespCaller):
    async def start(self) -> None:
        pool = aioredis.BlockingConnectionPool.from_url(
            self.url, max_connections=64, timeout=10, socket_timeout=None
        )
        self.client = aioredis.Redis.from_pool(pool)
        self.pubsub = self.client.pubsub()
        await self.pubsub.subscribe(self.channel)
        await self.pubsub.get_message(timeout=5)  # the subscribe confirmation
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while True:
            message = await self.pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
            if message is not None:
                self._on_push(message["channel"], message["data"])

    async def call(self) -> Any:
        self.ids += 1
        request_id = str(self.ids)
        future = self.pending[request_id] = asyncio.get_running_loop().create_future()
        await self.client.rpush(
            self.inbox, json.dumps({"id": request_id, "r": self.channel, "a": {"x": 1}})
        )
        return await future

    async def aclose(self) -> None:
        self.reader.cancel()
        await self.pubsub.aclose()
        await self.client.aclose()


# -- measuring --------------------------------------------------------------------------------


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


async def measure(caller: RespCaller, calls: int, concurrency: int) -> tuple[list[float], float]:
    latencies: list[float] = []

    async def run() -> None:
        for _ in range(calls // concurrency):
            started = time.perf_counter()
            await caller.call()
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(run() for _ in range(concurrency)))
    return latencies, time.perf_counter() - started


async def bench(
    url: str,
    calls: int,
    rounds: int,
    workers: dict[str, subprocess.Popen[bytes]],
    prefixes: dict[str, str],
) -> None:
    info = redis.Redis.from_url(url)
    callers = {
        "resp": RespCaller(url, prefixes["resp"]),
        "redispy": RedispyCaller(url, prefixes["redispy"]),
    }
    for caller in callers.values():
        await caller.start()
    try:
        for caller in callers.values():
            await measure(caller, 800, 8)  # warm up
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        print(
            f"redis-py {redis.__version__}, hiredis parser: {HIREDIS_AVAILABLE}; load average before: {load} (2 cores)"
        )
        print(
            f"{'client':<9}{'conc':>5}{'p50 µs':>9}{'p99 µs':>9}{'calls/s':>10}{'caller':>9}{'worker':>9}{'redis':>9}{'total':>9}  CPU µs/call"
        )
        for concurrency in (1, 32):
            samples = {name: ([], 0.0, [0.0, 0.0, 0.0]) for name in callers}
            for _ in range(rounds):
                for name, caller in callers.items():
                    cpu_info = info.info("cpu")
                    before = (
                        time.process_time(),
                        proc_cpu(workers[name].pid),
                        float(cpu_info["used_cpu_user"]) + float(cpu_info["used_cpu_sys"]),
                    )
                    latencies, elapsed = await measure(caller, calls // rounds, concurrency)
                    cpu_info = info.info("cpu")
                    after = (
                        time.process_time(),
                        proc_cpu(workers[name].pid),
                        float(cpu_info["used_cpu_user"]) + float(cpu_info["used_cpu_sys"]),
                    )
                    lat, total, cpu = samples[name]
                    lat += latencies
                    samples[name] = (
                        lat,
                        total + elapsed,
                        [c + a - b for c, a, b in zip(cpu, after, before)],
                    )
            for name, (lat, elapsed, cpu) in samples.items():
                ordered = sorted(lat)
                p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
                per_call = [c / len(ordered) * 1e6 for c in cpu]
                print(
                    f"{name:<9}{concurrency:>5}{statistics.median(ordered) * 1e6:>9.0f}{p99 * 1e6:>9.0f}"
                    f"{len(ordered) / elapsed:>10.0f}"
                    + "".join(f"{c:>9.0f}" for c in per_call)
                    + f"{sum(per_call):>9.0f}"
                )
        print(f"load average after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    finally:
        for caller in callers.values():
            await caller.aclose()
        info.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--calls", type=int, default=4000, help="calls per client and concurrency level"
    )
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--serve", choices=CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--prefix", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:  # a worker process
        serve = serve_resp if args.serve == "resp" else serve_redispy
        asyncio.run(serve(args.url, args.prefix))
        return
    tmp = tempfile.mkdtemp(prefix="redis-client-bench-")
    from tests.live_hub import free_port, start_redis

    port = free_port()
    server = start_redis(port, Path(tmp))
    url = f"redis://127.0.0.1:{port}/0"
    prefixes = {name: f"bench-{name}" for name in CLIENTS}
    workers = {
        name: subprocess.Popen(
            [sys.executable, __file__, "--serve", name, "--url", url, "--prefix", prefixes[name]],
            cwd=ROOT,
        )
        for name in CLIENTS
    }
    try:
        client = redis.Redis.from_url(url)
        for _ in range(100):
            if client.zcard("bench-resp:workers") and client.zcard("bench-redispy:workers"):
                break
            time.sleep(0.1)
        client.close()
        asyncio.run(bench(url, args.calls, args.rounds, workers, prefixes))
    finally:
        for worker in workers.values():
            worker.kill()
            worker.wait()
        server.kill()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
