"""A web process that stops sends the turns and runs it answered for to a worker first
(`runtime.handed_off`, from the ASGI lifespan's shutdown); only a worker that takes the chat
tasks' queue takes them on a link."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from celery import Celery

from apps.chat import runtime, worker_hooks

pytestmark = pytest.mark.anyio


class _Task:
    name = "test.task"

    def delay(self, work_id: str) -> None:  # pragma: no cover - the production path never gets here
        raise AssertionError("handed over on the link, not by Celery")


@pytest.fixture
def slow_hand_off(monkeypatch, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # production: the hand-off runs on the chat loop
    reached: list[str] = []

    async def hand_off(task, work_id: str) -> None:
        await asyncio.sleep(0.3)
        reached.append(work_id)

    monkeypatch.setattr(runtime, "_hand_off", hand_off)
    return reached


async def test_a_stopping_web_process_waits_for_work_on_its_way_to_a_worker(slow_hand_off):
    runtime.hand_off(_Task(), "w1")
    await runtime.handed_off(5.0)
    assert slow_hand_off == ["w1"]


async def test_it_waits_no_longer_than_it_is_given(slow_hand_off):
    runtime.hand_off(_Task(), "w2")
    loop = asyncio.get_running_loop()
    began = loop.time()
    await runtime.handed_off(0.05)
    assert loop.time() - began < 0.25
    assert slow_hand_off == []
    await runtime.handed_off(5.0)  # nothing left behind for the next test
    assert slow_hand_off == ["w2"]


def test_only_a_worker_on_the_chat_tasks_queue_takes_them_on_a_link(settings):
    app = Celery(broker="memory://")
    app.conf.task_default_queue = settings.CELERY_TASK_DEFAULT_QUEUE
    consumer = SimpleNamespace(app=app)  # worker_ready's sender: the worker's consumer
    assert worker_hooks._consumes_chat_tasks(consumer)  # every queue: the default
    app.amqp.queues.select(["mcp", settings.CELERY_TASK_DEFAULT_QUEUE])  # `-Q mcp,celery`
    assert worker_hooks._consumes_chat_tasks(consumer)
    app.amqp.queues.select(["mcp"])  # `-Q mcp`
    assert not worker_hooks._consumes_chat_tasks(consumer)
