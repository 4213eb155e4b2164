"""Real processes, no mocks: specs for the test servers in tests/servers and process probes."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from apps.connections.pool import Pool, PoolOptions
from apps.connections.remote import RemotePool
from apps.connections.specs import ServerSpec
from tests.waiting import eventually_async

SERVERS = Path(__file__).resolve().parent.parent / "servers"
PYTHON = sys.executable


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def tiny_spec(name: str = "tiny", *flags: str, **fields: object) -> ServerSpec:
    """The SDK-free stdio server: starts in ~20 ms (see tests/servers/tiny.py)."""
    return ServerSpec(
        name, command=PYTHON, args=("-I", "-S", str(SERVERS / "tiny.py"), *flags), **fields
    )


def sdk_spec(name: str, script: str = "echo.py", *args: str, **fields: object) -> ServerSpec:
    return ServerSpec(name, command=PYTHON, args=(str(SERVERS / script), *args), **fields)


def child_pids(pid: int | None = None) -> list[int]:
    """Direct children of `pid` (default: us), from /proc: field 4 of /proc/N/stat is the ppid.

    Our own children exclude the hub processes other test modules started for the session, and the
    search's encoder process (apps/discovery/embeddings.py: it lives as long as its parent).
    """
    from apps.discovery import embeddings
    from tests.live_hub import HUB_PIDS

    parent = pid or os.getpid()
    ignored = HUB_PIDS if pid is None else set()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent and int(entry) not in ignored:
            if _command_line(entry).endswith(f" -m {embeddings.WORKER}"):
                continue
            found.append(int(entry))
    return found


def _command_line(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def inflight(pool: Pool) -> int:
    """Requests on the pool's connections now: what a test waits for to know its calls arrived."""
    return sum(server["inflight"] for server in pool.stats_now()["servers"].values())


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
async def pool():
    async with Pool(PoolOptions(default_timeout=20.0)) as p:
        yield p
    await eventually_async(
        lambda: not child_pids(), timeout=5, what="every backend process to end with the pool"
    )


async def live_pool(url: str):
    """A `RemotePool` on `url` that already knows the live pool workers (for `_affinity` choices)."""
    pool = RemotePool(url)
    await pool._live_workers(refresh=True)
    return pool


def text(result) -> str:
    return result.content[0].text
