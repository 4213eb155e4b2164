"""The production channel layer: channels_redis's pub/sub layer with two of its waits removed.

- channels_redis polls for a first subscription every 0.1 s: a process with no open socket (or a
  worker with no running turn) sleeps, and the first events for a socket opened then waited up to
  100 ms before anything read them (measured: a chat's first token reached its page 60-70 ms after
  the worker sent it). Here a subscription wakes the receiver at once.
- It sends every PUBLISH of a process under the one lock that guards its subscriptions, so a
  process publishes one message per Redis round trip: with 100 chat turns on a worker, events
  waited ~0.5 s for the lock and a turn ~1.3 s to join its control group. Publishes go out side by
  side here (on the client's connection pool, at most PUBLISH_CONCURRENCY at once); subscribing
  keeps the lock. Messages of one group still leave in order: each sender awaits its publish.
- It SUBSCRIBEs every new channel in Redis (and UNSUBSCRIBEs it when its reader stops), though a
  socket's channel and a run's control channel only ever receive through their groups: two round
  trips under that lock per socket and per run, ~1 ms of a run socket's CPU. Here only a channel
  named with `INBOX_PREFIX` (the gateway's one per process, which other processes `send` to) is
  subscribed; any other channel is a queue in this process, fed by its groups' subscriptions.
Everything else is channels_redis's.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from channels_redis import pubsub
from channels_redis.utils import _wrap_close

from apps.core.hotstate import OUTAGE_ERRORS

logger = logging.getLogger(__name__)
PUBLISH_CONCURRENCY = 32
# new_channel(INBOX_PREFIX + ...) makes a channel other processes can `send` to directly.
INBOX_PREFIX = "inbox."


_away = False  # group_send_patiently found Redis unreachable and has not seen it back yet


async def group_send_patiently(
    layer: Any, group: str, message: dict[str, Any], *, patience: float
) -> bool:
    """`layer.group_send`, tried again while Redis is unreachable (a restart) for up to `patience`
    seconds; False when it never went out. One log line per outage, and one when it is back."""
    global _away
    loop = asyncio.get_running_loop()
    deadline, wait = loop.time() + patience, 0.1
    while True:
        try:
            await layer.group_send(group, message)
        except OUTAGE_ERRORS as exc:
            if not _away:
                _away = True
                logger.warning("channel layer: Redis unreachable (%s); events wait for it", exc)
            if loop.time() + wait > deadline:
                return False
            await asyncio.sleep(wait)
            wait = min(wait * 2, 1.0)
            continue
        if _away:
            _away = False
            logger.warning("channel layer: Redis is back; waiting events sent")
        return True


class _Shard(pubsub.RedisSingleShardConnection):
    def __init__(self, host, channel_layer) -> None:
        super().__init__(host, channel_layer)
        self._subscribed = asyncio.Event()
        self._publishing = asyncio.Semaphore(PUBLISH_CONCURRENCY)

    async def publish(self, channel, message) -> None:
        async with self._publishing:
            self._ensure_redis()  # synchronous: no other task runs between its check and its set
            try:
                await self._redis.publish(channel, message)
            except OUTAGE_ERRORS:
                # After a Redis restart the pool's idle connections are dead ("Connection lost"):
                # the first use of each fails and drops it. Once more, on a fresh connection.
                await self._redis.publish(channel, message)

    async def subscribe(self, channel) -> None:
        await super().subscribe(channel)
        self._subscribed.set()

    async def _do_receiving(self) -> None:
        lost_at: float | None = (
            None  # loop time the current Redis outage was first seen; None while connected
        )
        while True:
            try:
                if self._pubsub and self._pubsub.subscribed:
                    # After a failure this read reconnects, and redis-py resubscribes every channel
                    # of the pubsub on connect: a read that returns means the layer is back.
                    message = await self._pubsub.get_message(
                        ignore_subscribe_messages=True, timeout=0.1
                    )
                    if lost_at is not None:
                        down = asyncio.get_running_loop().time() - lost_at
                        text = "channel layer reconnected to Redis after %.1f s (messages sent meanwhile are lost)"
                        logger.info(text, down)
                        lost_at = None
                    self._receive_message(message)
                else:
                    self._subscribed.clear()
                    try:
                        await asyncio.wait_for(self._subscribed.wait(), 1.0)
                    except TimeoutError:
                        pass
            except (asyncio.CancelledError, GeneratorExit):
                raise
            except OUTAGE_ERRORS as exc:
                # Redis down or restarting is expected and handled (read again each second): one
                # line per outage, not a traceback per attempt; requests meanwhile answer 503.
                if lost_at is None:
                    lost_at = asyncio.get_running_loop().time()
                    logger.warning("channel layer lost Redis (%s); reconnecting", exc)
                await asyncio.sleep(1)
            except BaseException:  # noqa: BLE001 - as channels_redis: log, wait, read again
                logger.exception("Unexpected exception in receive task")
                await asyncio.sleep(1)


class _LoopLayer(pubsub.RedisPubSubLoopLayer):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._shards = [_Shard(shard.host, self) for shard in self._shards]

    def _addressable(self, channel: str) -> bool:
        return channel.startswith(f"{self.prefix}{INBOX_PREFIX}")

    async def new_channel(self, prefix: str = "specific.") -> str:
        channel = f"{self.prefix}{prefix}{uuid.uuid4().hex}"
        if self._addressable(channel):
            await self._subscribe_to_channel(channel)
        else:
            self.channels[channel] = asyncio.Queue()
        return channel

    async def receive(self, channel: str):
        # A receive that was cancelled (a reader's timeout) dropped the channel's queue; a local
        # channel gets a new one here instead of a Redis subscription.
        if channel not in self.channels and not self._addressable(channel):
            self.channels[channel] = asyncio.Queue()
        return await super().receive(channel)


class RedisPubSubChannelLayer(pubsub.RedisPubSubChannelLayer):
    def _get_layer(self):
        loop = asyncio.get_running_loop()
        layer = self._layers.get(loop)
        if layer is None:
            layer = self._layers[loop] = _LoopLayer(*self._args, **self._kwargs, channel_layer=self)
            _wrap_close(self, loop)  # as channels_redis: the layer closes with its loop
        return layer
