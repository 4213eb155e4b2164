"""Chat tests drive the session's real hub (tests/conftest.py `hub`) with the scripted LLM and the
echo MCP server: the worker (production shape) or the web process (embedded) runs the turns."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import websockets
from asgiref.sync import sync_to_async

from apps.llm.models import Provider
from tests.chat.flavours import FLAVOURS, Flavour
from tests.gateway.conftest import (  # noqa: F401 - fixtures shared with the gateway tests
    _close_thread_connections,
    alice_endpoint,
    alice_hub_token,
    anyio_backend,
    echo_discovery,
    echo_server,
)
from tests.llm_server import ScriptedLLM


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def alice_provider(alice, llm) -> Provider:
    return Provider.objects.create(
        name="scripted",
        kind="openai",
        base_url=llm.url,
        default_model="scripted-model",
        owner=alice,
        is_default=True,
    )


@pytest.fixture(params=FLAVOURS, ids=[f.name for f in FLAVOURS])
def flavour(request) -> Flavour:
    """Each product flavour of tests/chat/flavours.py in turn."""
    return request.param


@pytest.fixture
def flavour_provider(flavour, alice, llm) -> Provider:
    """Alice's default provider, speaking as the flavour's product does."""
    return Provider.objects.create(
        name=flavour.name,
        kind=flavour.kind,
        base_url=llm.url,
        default_model=flavour.model,
        owner=alice,
        is_default=True,
        **flavour.settings,
    )


@pytest.fixture
def charlie_hub_token(charlie) -> str:
    from apps.accounts.services import create_access_token

    return create_access_token(user=charlie, name="chat tests")[1]


class Api:
    """The hub's REST API as a script uses it (bearer token)."""

    def __init__(self, base_url: str, token: str) -> None:
        self.client = httpx2.AsyncClient(
            base_url=base_url + "/api", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )

    async def __aenter__(self) -> Api:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.aclose()

    async def new_conversation(self, **fields: Any) -> str:
        response = await self.client.post("/conversations/", json=fields)
        assert response.status_code == 201, response.text
        return response.json()["id"]


class ChatSocket:
    """One WebSocket client of /ws/chat/<id>/, remembering every event it received."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []

    async def send(self, kind: str, payload: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"type": kind}
        if payload is not None:
            message["payload"] = payload
        await self.ws.send(json.dumps(message))

    async def next(self, timeout: float = 20) -> dict[str, Any]:
        event = json.loads(await asyncio.wait_for(self.ws.recv(), timeout))
        self.events.append(event)
        return event

    async def until(self, kind: str, timeout: float = 30, **payload: Any) -> dict[str, Any]:
        """Events up to and including the first of `kind` whose payload has these values."""
        while True:
            event = await self.next(timeout)
            if event["type"] == kind and all(
                event["payload"].get(k) == v for k, v in payload.items()
            ):
                return event

    def text(self) -> str:
        return "".join(e["payload"]["text"] for e in self.events if e["type"] == "text")

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]


def ws_url(hub, conversation_id: str) -> str:
    return hub.url(f"/ws/chat/{conversation_id}/").replace("http://", "ws://")


@asynccontextmanager
async def chat_socket(hub, conversation_id: str, token: str) -> AsyncIterator[ChatSocket]:
    headers = {"Authorization": f"Bearer {token}"}
    async with websockets.connect(ws_url(hub, conversation_id), additional_headers=headers) as ws:
        yield ChatSocket(ws)


def seqs(events: list[dict[str, Any]]) -> list[int]:
    return [e["seq"] for e in events if e["seq"] is not None]


def db(fn):
    return sync_to_async(fn)


EVERYTHING_JS = (
    Path(__file__).resolve().parents[2]
    / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)
EVERYTHING = {"name": "everything", "command": "node", "args": [str(EVERYTHING_JS), "stdio"]}


@pytest.fixture(scope="session")
def everything_discovery(hub):
    """One real discovery of the reference `server-everything` (stdio), reused by every test."""
    from apps.catalog.models import McpServer
    from apps.connections.default import run_with_pool

    return run_with_pool(lambda pool: pool.discover(McpServer(**EVERYTHING).to_spec()))


@pytest.fixture
def everything_endpoint(alice, everything_discovery):
    """Alice's default endpoint with every tool of server-everything (its prompts, resources and
    templates come with the server)."""
    from apps.catalog.introspection import apply_discovery
    from apps.catalog.models import McpServer
    from apps.toolsets.services import enable_tools

    server = McpServer.objects.create(**EVERYTHING)
    apply_discovery(server=server, discovery=everything_discovery)
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=server.tools.all())
    return endpoint
