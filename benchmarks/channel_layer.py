"""A first subscription's wait on the hub's channel layer (apps/core/channel_layer.py).

    .venv/bin/python benchmarks/channel_layer.py [--rounds 40]

What tests/core/test_channel_layer.py proves with a "did not wait for the idle wait" bound, as a
figure: a process with nothing subscribed idles (channels_redis polls every 0.1 s there, so a first
message waited up to 100 ms; the hub's layer is woken by the subscription); a socket then opens (a
group is joined) and a message is sent to the group, 0.05 s into the idle wait. Measured per round:
from the send to the receive. One command: its own redis-server on a free port (the shared one's
figures would include other users).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")

import django  # noqa: E402

django.setup()

from apps.core.channel_layer import RedisPubSubChannelLayer  # noqa: E402
from tests.live_hub import free_port, start_redis  # noqa: E402


async def first_receive(layer, group: str) -> float:
    """Seconds from a group send to its receive on a channel that joined while nothing was
    subscribed (the receiver idle for 0.05 s)."""
    channel = await layer.new_channel("bench.")
    await layer.group_add(group, channel)
    await layer.group_discard(group, channel)
    await layer._get_layer()._shards[0].unsubscribe(channel)  # nothing subscribed: it idles
    await asyncio.sleep(0.05)
    channel = await layer.new_channel("bench.")
    await layer.group_add(group, channel)
    started = time.perf_counter()
    await layer.group_send(group, {"type": "hello"})
    await asyncio.wait_for(layer.receive(channel), 5)
    took = time.perf_counter() - started
    await layer.group_discard(group, channel)
    return took


async def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as data:
        port = free_port()
        redis = start_redis(port, Path(data))
        url = f"redis://127.0.0.1:{port}/0"
        layer = RedisPubSubChannelLayer(hosts=[url])
        try:
            samples = [await first_receive(layer, f"wake{n}") for n in range(rounds)]
        finally:
            await layer.flush()
            redis.kill()
            redis.wait()
    ms = sorted(v * 1000 for v in samples)
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
    print(
        f"first receive after a group send, {rounds} rounds (load {os.getloadavg()[0]:.2f}): "
        f"p50 {statistics.median(ms):.1f} ms, p95 {p95:.1f} ms, max {ms[-1]:.1f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    asyncio.run(main(parser.parse_args().rounds))
