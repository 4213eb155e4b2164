"""What the self-healing tests share: a private hub (own Redis, one or two Celery workers), a
scripted model that counts with a tool and notes when each round starts, and where a run or turn is."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.live_hub import (
    HubProcesses,
    free_port,
    hub_env,
    start_private_hub,
    start_redis,
    start_worker,
    stop,
    wait_for_pool_worker,
)
from tests.llm_server import Reply

ROUNDS = 8


@dataclass
class Counter:
    """The model's script: each task counts to ROUNDS with the echo server's `add`, one call per
    round; `asked` notes (task, when) for every model request, to time the next round after a fault."""

    rounds: int = ROUNDS
    delay: float = 0.3
    asked: list[tuple[str, float]] = field(default_factory=list)

    def __call__(self, body: dict) -> Reply:
        task = next(
            (m["content"] for m in body["messages"] if m["role"] == "user"), ""
        )  # the run's task or the chat message
        self.asked.append((task if isinstance(task, str) else str(task), time.monotonic()))
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        if done < self.rounds:
            return Reply(
                tool_calls=[(f"c{done + 1}", "add", {"a": done, "b": 1})], delay=self.delay
            )
        return Reply(text=[f"Counted to {done}"])

    def next_round_after(self, task: str, moment: float) -> float | None:
        """Seconds from `moment` to the first model request of `task` after it."""
        later = [at for asked, at in self.asked if task in asked and at > moment]
        return min(later) - moment if later else None


@dataclass
class Cluster:
    """A private hub: web + workers on their own Redis (so the session's workers stay out of it)."""

    hub: HubProcesses
    redis: subprocess.Popen
    redis_url: str
    log_dir: Path
    extra: dict[str, str]

    @property
    def workers(self) -> list[subprocess.Popen]:
        return self.hub.processes[1:]

    def add_worker(self, name: str) -> subprocess.Popen:
        env = hub_env(MCPHUB_DATA_DIR=str(self.log_dir), REDIS_URL=self.redis_url, **self.extra)
        worker = start_worker(env, self.log_dir, name=name)
        self.hub.processes.append(worker)
        return worker

    def kill(self, worker: subprocess.Popen, sig: signal.Signals = signal.SIGKILL) -> float:
        """Signal a worker (SIGKILL: its whole group, as a crash; SIGTERM: the worker alone, as a
        deploy's stop); the moment it was sent."""
        if sig == signal.SIGKILL:
            os.killpg(worker.pid, sig)
        else:
            os.kill(worker.pid, sig)
        return time.monotonic()

    def stop(self) -> None:
        stop(self.hub.processes)
        self.redis.kill()
        self.redis.wait()


def start_cluster(tmp_path: Path, *, workers: int = 1, **extra: str) -> Cluster:
    redis = start_redis(port := free_port(), tmp_path)
    redis_url = f"redis://127.0.0.1:{port}/0"
    hub = start_private_hub(tmp_path / "hub", redis_url=redis_url, **extra)
    cluster = Cluster(hub, redis, redis_url, tmp_path / "hub", extra)
    for n in range(1, workers):
        cluster.add_worker(f"worker{n + 1}")
    return cluster


async def workers_ready(cluster: Cluster, count: int) -> None:
    """`count` pool workers registered (each Celery worker serves the pool once it is ready)."""
    import redis

    from apps.connections.worker import DEFAULT_PREFIX, workers_key
    from tests.waiting import eventually

    client = redis.Redis.from_url(cluster.redis_url)
    try:
        await asyncio.to_thread(
            eventually,
            lambda: (
                len(client.zrangebyscore(workers_key(DEFAULT_PREFIX), time.time() - 5, "+inf"))
                >= count
            ),
            timeout=90,
            interval=0.2,
            what=f"{count} pool workers to register",
        )
    finally:
        client.close()
    await asyncio.to_thread(wait_for_pool_worker, redis_url=cluster.redis_url)


def worker_name(process: subprocess.Popen) -> str:
    """The lease holder name a worker process writes (apps.chat.lease.WORKER)."""
    import socket

    return f"{socket.gethostname()}:{process.pid}"
