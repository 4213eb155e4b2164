"""A/B of the lean POST's HTTP client: transports/http1.py against aiohttp, in one process.

    .venv/bin/python benchmarks/lean_post.py [--calls 400] [--rounds 6]

Two pools (lean requests, the default) take raw `tools/call`s of tests/servers/echo.py over
Streamable HTTP, answered with SSE ("http") and with JSON bodies ("http-json"). Pool A keeps
the lean path's own client (`Http1Client`); in pool B, after the handshake, each connection's
client is replaced by an aiohttp `ClientSession` behind the same small interface (post, status,
headers, aread / aiter_bytes, aclose), so only the HTTP client differs. Interleaved round by
round (the machine is shared: noise hits both alike), the order rotating. Printed: p50 at
concurrency 1, calls/s at 32, and this process's CPU per call (the backend excluded), with the
load average.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from apps.connections.pool import Pool  # noqa: E402
from apps.connections.specs import ServerSpec  # noqa: E402
from benchmarks.lean import measure  # noqa: E402
from tests.connections.test_http_transports import _serve  # noqa: E402


class _AioResponse:
    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status_code = response.status
        self.headers = {k.lower(): v for k, v in response.headers.items()}

    async def aread(self) -> bytes:
        return await self._response.read()

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        async for chunk in self._response.content.iter_any():
            yield chunk

    async def aclose(self) -> None:
        self._response.release()


class AioPost:
    """aiohttp in the place of `Http1Client` (keep-alive, no connection cap, as Http1Client)."""

    def __init__(self, url: str, headers: Mapping[str, str]) -> None:
        self.url = url
        self.session = aiohttp.ClientSession(
            headers=dict(headers),
            connector=aiohttp.TCPConnector(limit=0, limit_per_host=0),
            auto_decompress=False,
            skip_auto_headers=("User-Agent", "Accept-Encoding"),
        )

    async def post(self, body: bytes, headers: Mapping[str, str]) -> _AioResponse:
        return _AioResponse(await self.session.post(self.url, data=body, headers=dict(headers)))

    def close(self) -> None:
        asyncio.get_running_loop().create_task(self.session.close())


def _swap_to_aiohttp(pool: Pool) -> None:
    for server in pool._servers.values():
        lean = server.conn.lean if server.conn is not None else None
        assert lean is not None, "the lean path is not in use"
        headers = {"user-agent": "mcp-hub", **lean.link.headers, **lean.headers()}
        lean._h1.close()
        lean._h1 = AioPost(lean.link.url, headers)


async def bench(args: argparse.Namespace) -> None:
    servers = {kind: _serve(kind) for kind in ("http", "http-json")}
    try:
        specs = {
            kind: ServerSpec(
                "echo", transport="streamable_http", url=f"http://127.0.0.1:{port}/mcp"
            )
            for kind, (_, port) in servers.items()
        }
        paths: list[tuple[str, Any, ServerSpec]] = []
        swapped: list[Pool] = []
        for kind, spec in specs.items():
            http1, aio = Pool(), Pool()
            paths.append((f"{kind} http1.py", http1, spec))
            paths.append((f"{kind} aiohttp", aio, spec))
            swapped.append(aio)
        for _, caller, spec in paths:
            await caller.call_tool(spec, "echo", {"text": "hello"}, raw=True)
        for pool in swapped:
            _swap_to_aiohttp(pool)
        for _, caller, spec in paths:
            for _ in range(100):
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
            f"raw tools/call of echo, {args.calls} calls per path and round, {args.rounds} rounds"
        )
        print(
            f"load average: min {min(loads):.2f}, median {statistics.median(loads):.2f}, "
            f"max {max(loads):.2f} (2 cores)"
        )
        print(f"{'path':20} | c=1 p50 ms  cpu ms/call | c=32 calls/s  cpu ms/call")
        for label, runs in figures.items():
            p50 = statistics.median(statistics.median(lat) for lat, _, _ in runs[1]) * 1000
            cpu1 = sum(c for _, _, c in runs[1]) / sum(len(lat) for lat, _, _ in runs[1]) * 1000
            rate = statistics.median(len(lat) / elapsed for lat, elapsed, _ in runs[32])
            cpu32 = sum(c for _, _, c in runs[32]) / sum(len(lat) for lat, _, _ in runs[32]) * 1000
            print(f"{label:20} | {p50:10.3f}  {cpu1:11.3f} | {rate:12.0f}  {cpu32:11.3f}")
        for _, caller, _ in paths:
            await caller.aclose()
        await asyncio.sleep(0.1)  # the aiohttp sessions' close tasks
    finally:
        for proc, _ in servers.values():
            proc.kill()
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=6)
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
