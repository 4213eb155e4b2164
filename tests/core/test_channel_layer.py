"""The production channel layer reads a new subscription at once (channels_redis polls every 0.1 s
while nothing is subscribed, which delayed a freshly opened chat's first events)."""

import asyncio
import time

import pytest
from django.conf import settings

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(not settings.REDIS_URL, reason="the Redis channel layer: production shape")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_first_subscription_receives_without_waiting_for_the_idle_poll():
    from apps.core.channel_layer import RedisPubSubChannelLayer

    layer = RedisPubSubChannelLayer(hosts=[settings.REDIS_URL])
    try:
        delays = []
        for attempt in range(3):
            channel = await layer.new_channel("test.")
            await layer.group_add(f"wake{attempt}", channel)
            await layer.group_discard(f"wake{attempt}", channel)
            await layer._get_layer()._shards[0].unsubscribe(channel)  # nothing subscribed: the receiver idles
            await asyncio.sleep(0.05)  # mid-way through channels_redis's 0.1 s idle sleep
            channel = await layer.new_channel("test.")
            await layer.group_add(f"wake{attempt}", channel)
            started = time.perf_counter()
            await layer.group_send(f"wake{attempt}", {"type": "hello", "n": attempt})
            message = await asyncio.wait_for(layer.receive(channel), 2)
            delays.append(time.perf_counter() - started)
            assert message == {"type": "hello", "n": attempt}
            await layer.group_discard(f"wake{attempt}", channel)
        assert max(delays) < 0.04, delays
    finally:
        await layer.flush()
