from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from apps.llm.adapters import Adapter, adapter_class
from apps.llm.types import Event, Message, ToolSpec
from tests.llm_server import ScriptedLLM

ECHO = ToolSpec(
    name="echo",
    description="Echo the text back",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
)
HELLO = [Message(role="system", text="You are terse."), Message(role="user", text="Say hello")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture(params=["openai", "anthropic"])
def kind(request) -> str:
    """Each adapter test runs against both wire formats."""
    return request.param


@pytest.fixture
async def adapter(kind: str, llm: ScriptedLLM) -> AsyncIterator[Adapter]:
    async with adapter_class(kind)(base_url=llm.url, api_key="sk-test", timeout=10) as instance:
        yield instance


async def collect(
    adapter: Adapter, *, messages=HELLO, tools=(ECHO,), model: str = "scripted-model"
) -> list[Event]:
    return [event async for event in adapter.stream(model=model, messages=messages, tools=tools)]
