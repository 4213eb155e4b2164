"""Celery's broker channel keeps one Redis client for its pool (apps/core/broker.py): tasks go out
and come back as before, without a client built per command."""

import pytest
from django.conf import settings

pytestmark = pytest.mark.skipif(not settings.REDIS_URL, reason="the Redis broker: production shape")

QUEUE = "mcphub-test-broker"


@pytest.fixture
def channel():
    from mcphub.celery import app

    with app.connection_for_write() as connection:
        channel = connection.default_channel
        channel.queue_declare(QUEUE)
        yield channel
        channel.queue_delete(QUEUE)


def test_the_hub_sends_tasks_through_its_transport():
    from apps.core.broker import Transport
    from mcphub.celery import app

    with app.connection_for_write() as connection:
        assert isinstance(connection.transport, Transport)


def test_commands_share_one_client_and_messages_round_trip(channel):
    with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
        assert first is second
        assert first.connection_pool is channel.pool

    for n in range(3):
        channel.basic_publish(channel.prepare_message(f"m{n}"), exchange="", routing_key=QUEUE)
    # The worker's path: each message recorded unacknowledged, then acknowledged.
    received = [channel.basic_get(QUEUE, no_ack=False) for _ in range(3)]
    assert [m.body for m in received] == [b"m0", b"m1", b"m2"]
    with channel.conn_or_acquire() as client:
        assert client.hlen(channel.unacked_key) == 3
        for message in received:
            message.ack()
        assert client.hlen(channel.unacked_key) == 0
    assert channel.basic_get(QUEUE) is None


def test_a_replaced_pool_gets_a_client_of_its_own(channel):
    with channel.conn_or_acquire() as before:
        pass
    channel._disconnect_pools()  # as after a fork, or a reconnect
    with channel.conn_or_acquire() as after:
        assert after is not before
        assert after.connection_pool is channel.pool
        assert after.ping()


def test_a_client_passed_in_is_used_as_it_is(channel):
    from redis import Redis

    own = Redis(connection_pool=channel.pool)
    with channel.conn_or_acquire(own) as client:
        assert client is own
