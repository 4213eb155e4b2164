"""What an `openapi` tool call adds over calling the REST API directly, beside what the pool adds
to an MCP HTTP backend over calling that backend directly.

    .venv/bin/python benchmarks/openapi.py [--calls 1000] [--rounds 3]

Starts, each in a process of its own: our test REST API (tests/openapi/rest_api.py, aiohttp) and
the echo MCP server over Streamable HTTP (tests/servers/echo.py). This process then measures, at
concurrency 1 and 32, interleaved round by round so machine noise hits every path alike:

  rest direct     GET /v1/items/7?color=blue with httpx2 (one keep-alive client)
  rest openapi    Pool.call_tool(getItem, raw=True) on an `openapi` spec of that API's document:
                  argument validation, the request built from the operation, the response made
                  a tool result, the in-memory MCP session of the transport
  mcp direct      tools/call echo as one POST with httpx2 on an initialized session
  mcp pool        Pool.call_tool(echo, raw=True) on a streamable_http spec of that backend

The overhead of each kind is p50(through the pool) − p50(direct); the CPU this process spent per
call (the caller and the pool; the API and the backend run elsewhere) is printed beside it, a
figure that moves less than latency on a busy machine. Both run in the pool's process
(the worker, or the web process when embedded); the gateway's own cost in front of the pool is the
same for both kinds and is measured by benchmarks/gateway.py. The load average is printed too.
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
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")

import httpx2  # noqa: E402

ECHO = ROOT / "tests" / "servers" / "echo.py"
PROTOCOL = "2025-06-18"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_processes() -> tuple[list[subprocess.Popen], str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    api = subprocess.Popen(
        [sys.executable, "-m", "tests.openapi.rest_api"], stdout=subprocess.PIPE, env=env, cwd=ROOT
    )
    api_url = api.stdout.readline().decode().strip()  # type: ignore[union-attr]
    port = free_port()
    echo = subprocess.Popen(
        [sys.executable, str(ECHO), "http", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    echo_url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx2.get(echo_url, timeout=1)
            break
        except httpx2.HTTPError:
            time.sleep(0.1)
    return [api, echo], api_url, echo_url


class RawMcp:
    """tools/call as one POST on an initialized session (the backend without any hub)."""

    def __init__(self, url: str, http: httpx2.AsyncClient) -> None:
        self.url, self.http, self.headers = (
            url,
            http,
            {"Accept": "application/json, text/event-stream"},
        )
        self.ids = 0

    async def initialize(self) -> None:
        params = {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "b", "version": "1"},
        }
        r = await self.http.post(
            self.url,
            json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params},
            headers=self.headers,
        )
        self.headers |= {
            "Mcp-Session-Id": r.headers["mcp-session-id"],
            "MCP-Protocol-Version": PROTOCOL,
        }
        await self.http.post(
            self.url,
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=self.headers,
        )

    async def call(self) -> None:
        self.ids += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.ids,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hi"}},
        }
        r = await self.http.post(self.url, json=body, headers=self.headers)
        text = r.text
        data = (
            json.loads(text[text.index("{") :].split("\n", 1)[0])
            if text.startswith(("event", "data"))
            else r.json()
        )
        assert data["result"]["isError"] is False, data


async def measure(
    call: Callable[[], Awaitable[object]], calls: int, concurrency: int
) -> list[float]:
    times: list[float] = []
    per = calls // concurrency

    async def runner() -> None:
        for _ in range(per):
            t = time.perf_counter()
            await call()
            times.append((time.perf_counter() - t) * 1000)

    await asyncio.gather(*(runner() for _ in range(concurrency)))
    return times


async def bench(calls: int, rounds: int, api_url: str, echo_url: str) -> None:
    import django

    django.setup()
    from apps.catalog import openapi
    from apps.connections.pool import Pool
    from apps.connections.specs import ServerSpec

    loaded = openapi.load(source=f"{api_url}/openapi.json", public_only=False)
    rest_spec = ServerSpec(
        name="rest",
        transport="openapi",
        url=loaded.base_url,
        openapi=openapi.spec_blob(loaded.text, {}),
        timeout=30,
    )
    mcp_spec = ServerSpec(name="echo", transport="streamable_http", url=echo_url, timeout=30)
    args = {"itemId": 7, "color": "blue"}
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=64)
    async with (
        httpx2.AsyncClient(limits=limits, timeout=30) as http,
        httpx2.AsyncClient(limits=limits, timeout=30) as mcp_http,
        Pool() as pool,
    ):
        raw = RawMcp(echo_url, mcp_http)
        await raw.initialize()

        async def rest_direct() -> None:
            r = await http.get(f"{loaded.base_url}/items/7", params={"color": "blue"})
            assert r.status_code == 200

        async def rest_openapi() -> None:
            result = await pool.call_tool(rest_spec, "getItem", args, raw=True)
            assert result["isError"] is False, result

        async def mcp_pool() -> None:
            result = await pool.call_tool(mcp_spec, "echo", {"text": "hi"}, raw=True)
            assert result["isError"] is False, result

        paths = {
            "rest direct": rest_direct,
            "rest openapi": rest_openapi,
            "mcp direct": raw.call,
            "mcp pool": mcp_pool,
        }
        for call in paths.values():  # connect, warm up
            for _ in range(50):
                await call()
        results: dict[tuple[str, int], list[float]] = {}
        cpu: dict[tuple[str, int], float] = {}
        for _ in range(rounds):
            for concurrency in (1, 32):
                for name, call in paths.items():
                    started = time.process_time()
                    times = await measure(call, calls, concurrency)
                    key = (name, concurrency)
                    cpu[key] = cpu.get(key, 0.0) + (time.process_time() - started)
                    results.setdefault(key, []).extend(times)
    print(
        f"load average {os.getloadavg()[0]:.2f}; {calls} calls x {rounds} rounds per path and concurrency"
    )
    for concurrency in (1, 32):
        print(f"\nconcurrency {concurrency}:")
        p50 = {}
        for name in paths:
            times = sorted(results[(name, concurrency)])
            p50[name] = statistics.median(times)
            p99 = times[int(len(times) * 0.99) - 1]
            per_call = cpu[(name, concurrency)] / len(times) * 1000
            print(
                f"  {name:13} p50 {p50[name]:7.3f} ms   p99 {p99:7.3f} ms   "
                f"CPU of this process {per_call:6.3f} ms/call"
            )
        print(
            f"  overhead: openapi {p50['rest openapi'] - p50['rest direct']:+.3f} ms over the REST API direct; "
            f"MCP HTTP backend {p50['mcp pool'] - p50['mcp direct']:+.3f} ms over the backend direct"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    processes, api_url, echo_url = start_processes()
    try:
        asyncio.run(bench(options.calls, options.rounds, api_url, echo_url))
    finally:
        for process in processes:
            process.terminate()
            process.wait(10)


if __name__ == "__main__":
    main()
