"""Cancelling the task that reads a reply closes the HTTP response: the provider sees the client go."""

import asyncio

import pytest

from apps.llm.types import TextDelta
from tests.llm_server import Reply
from tests.waiting import eventually_async

pytestmark = pytest.mark.anyio


async def _read_into(adapter, seen: list, first: asyncio.Event) -> None:
    async for event in adapter.stream(model="scripted-model", messages=[], tools=[]):
        seen.append(event)
        first.set()


async def test_cancel_mid_stream_disconnects_from_the_provider(adapter, llm):
    llm.script([Reply(text=["one", "two", "three", "four", "five"], chunk_delay=0.4)])
    seen, first = [], asyncio.Event()
    task = asyncio.create_task(_read_into(adapter, seen, first))
    await asyncio.wait_for(first.wait(), 5)

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert await asyncio.to_thread(llm.wait_for_disconnects, 1, 5.0)
    assert seen[0] == TextDelta("one") and len(seen) < 5


async def test_cancel_while_the_model_thinks_disconnects_too(adapter, llm):
    llm.script([Reply(text=["late"], delay=5.0)])
    task = asyncio.create_task(_read_into(adapter, [], asyncio.Event()))
    await eventually_async(
        lambda: llm.active == 1, timeout=5, what="the request at the scripted LLM"
    )

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert await asyncio.to_thread(llm.wait_for_disconnects, 1, 5.0)


async def test_a_reader_that_stops_early_disconnects(adapter, llm):
    llm.script([Reply(text=["one", "two", "three", "four", "five"], chunk_delay=0.4)])

    stream = adapter.stream(model="scripted-model", messages=[], tools=[])
    assert await anext(stream) == TextDelta("one")
    await stream.aclose()

    assert await asyncio.to_thread(llm.wait_for_disconnects, 1, 5.0)
