"""The production channel layer reads a new subscription at once (channels_redis polls every 0.1 s
while nothing is subscribed, which delayed a freshly opened chat's first events)."""

import asyncio
import time

import pytest
from django.conf import settings

from tests.waiting import eventually_async

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not settings.REDIS_URL, reason="the Redis channel layer: production shape"),
]


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
            await (
                layer._get_layer()._shards[0].unsubscribe(channel)
            )  # nothing subscribed: the receiver idles
            # The receiver idles now, in a wait of up to 1 s for a first subscription.
            await asyncio.sleep(0.05)
            channel = await layer.new_channel("test.")
            await layer.group_add(f"wake{attempt}", channel)
            started = time.perf_counter()
            await layer.group_send(f"wake{attempt}", {"type": "hello", "n": attempt})
            message = await asyncio.wait_for(layer.receive(channel), 2)
            delays.append(time.perf_counter() - started)
            assert message == {"type": "hello", "n": attempt}
            await layer.group_discard(f"wake{attempt}", channel)
        # Woken at once (measured 0.5-10 ms), not at the end of the idle wait (~0.95 s from here).
        assert max(delays) < 0.5, delays
    finally:
        await layer.flush()


async def test_a_redis_outage_is_one_warning_and_one_reconnected_line_without_a_traceback(
    tmp_path, caplog
):
    from apps.core.channel_layer import RedisPubSubChannelLayer
    from tests.live_hub import free_port, start_redis

    redis = start_redis(
        port := free_port(), tmp_path
    )  # a throwaway server to kill: never the shared one
    layer = RedisPubSubChannelLayer(hosts=[f"redis://127.0.0.1:{port}/0"])
    try:
        channel = await layer.new_channel("test.")
        await layer.group_add("outage", channel)
        with caplog.at_level("INFO", logger="apps.core.channel_layer"):
            redis.kill()
            await asyncio.to_thread(redis.wait)
            await asyncio.sleep(2.5)  # the receiver fails several reads meanwhile, a second apart
            redis = await asyncio.to_thread(start_redis, port, tmp_path)
            # Its next read (a second apart) reconnects and resubscribes.
            await eventually_async(lambda: _logged(caplog, "reconnected"), timeout=10)
            await layer.group_send("outage", {"type": "hello"})
            assert await asyncio.wait_for(layer.receive(channel), 2) == {"type": "hello"}
        records = [r for r in caplog.records if r.name == "apps.core.channel_layer"]
        assert [r.levelname for r in records] == ["WARNING", "INFO"], [
            r.getMessage() for r in records
        ]
        assert "lost Redis" in records[0].getMessage() and "reconnected" in records[1].getMessage()
        assert not [r for r in records if r.exc_info], "an outage logged a traceback"
    finally:
        await layer.flush()
        redis.kill()
        redis.wait()


async def test_an_unexpected_receive_error_keeps_its_traceback(caplog):
    from apps.core.channel_layer import RedisPubSubChannelLayer

    layer = RedisPubSubChannelLayer(hosts=[settings.REDIS_URL])
    try:
        channel = await layer.new_channel("test.")
        await layer.group_add("unexpected", channel)
        shard = layer._get_layer()._shards[0]
        receive_message, failed = shard._receive_message, []

        def fail_once(message) -> None:
            if message is not None and not failed:
                failed.append(message)
                raise ValueError("a bug")
            receive_message(message)

        shard._receive_message = fail_once
        with caplog.at_level("INFO", logger="apps.core.channel_layer"):
            await layer.group_send("unexpected", {"type": "lost"})
            await eventually_async(lambda: _logged(caplog, "Unexpected exception"), timeout=5)
        records = [r for r in caplog.records if r.name == "apps.core.channel_layer"]
        assert [(r.levelname, r.exc_info[0] if r.exc_info else None) for r in records] == [
            ("ERROR", ValueError)
        ]
    finally:
        await layer.flush()


async def test_only_inbox_channels_are_subscribed_in_redis_and_groups_reach_the_rest():
    """A socket's channel (and a run's control channel) receives through its groups alone: it costs
    no SUBSCRIBE of its own. An inbox channel receives what another process `send`s it."""
    from apps.core.channel_layer import INBOX_PREFIX, RedisPubSubChannelLayer

    layer, other = (
        RedisPubSubChannelLayer(hosts=[settings.REDIS_URL]),
        RedisPubSubChannelLayer(hosts=[settings.REDIS_URL]),
    )
    try:
        local, inbox = await layer.new_channel(), await layer.new_channel(f"{INBOX_PREFIX}test.")
        shard = layer._get_layer()._shards[0]
        assert inbox in shard._subscribed_to and local not in shard._subscribed_to
        await layer.group_add("members", local)
        await other.group_send("members", {"type": "to.group"})
        await other.send(inbox, {"type": "to.inbox"})
        assert await asyncio.wait_for(layer.receive(local), 2) == {"type": "to.group"}
        assert await asyncio.wait_for(layer.receive(inbox), 2) == {"type": "to.inbox"}
        # A reader that timed out and reads again still hears the group, still without a subscription.
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(layer.receive(local), 0.05)
        reading = asyncio.create_task(layer.receive(local))
        await asyncio.sleep(0.01)  # the reader is waiting when the message comes
        await other.group_send("members", {"type": "again"})
        assert await asyncio.wait_for(reading, 2) == {"type": "again"}
        assert local not in shard._subscribed_to
        await layer.group_discard("members", local)
        assert shard._subscribed_to == {inbox}
    finally:
        await layer.flush()
        await other.flush()


def _logged(caplog, text: str) -> bool:
    return any(
        r.name == "apps.core.channel_layer" and text in r.getMessage() for r in caplog.records
    )
