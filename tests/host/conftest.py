"""Host tests: backends that ask back (sampling, roots) during calls from chat, runs and gateway
clients, answered by the real hub with the scripted LLM standing in for the user's model."""

from __future__ import annotations

import sys

import pytest

from apps.catalog.introspection import apply_discovery
from apps.catalog.models import McpServer
from apps.toolsets.services import enable_tools
from tests.chat.conftest import (  # noqa: F401 - fixtures shared with the chat tests
    _close_thread_connections,
    alice_hub_token,
    alice_provider,
    anyio_backend,
    echo_discovery,
    echo_server,
    llm,
)
from tests.live_hub import ROOT

HERE = ROOT / "tests" / "host"
ASKER = {"name": "asker", "command": sys.executable, "args": [str(HERE / "host_server.py")]}
EVERYTHING = {
    "name": "everything",
    "command": "node",
    "args": [
        str(ROOT / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        "stdio",
    ],
}


def _discovered(spec: dict) -> object:
    from apps.connections.default import run_with_pool

    return run_with_pool(lambda pool: pool.discover(McpServer(**spec).to_spec()))


@pytest.fixture(scope="session")
def asker_discovery(hub):
    return _discovered(ASKER)


@pytest.fixture(scope="session")
def everything_discovery(hub):
    return _discovered(EVERYTHING)


def _endpoint(user, spec: dict, discovery, **settings):
    server = McpServer.objects.create(**spec)
    apply_discovery(server=server, discovery=discovery)
    endpoint = user.endpoints.get()
    for name, value in settings.items():
        setattr(endpoint, name, value)
    endpoint.save()
    enable_tools(endpoint=endpoint, tools=server.tools.all())
    return endpoint


@pytest.fixture
def asker_endpoint(alice, asker_discovery):
    """Alice's endpoint with the asking server's tools; her model answers sampling at once."""
    return _endpoint(alice, ASKER, asker_discovery, sampling="auto", sampling_max_tokens=300)


@pytest.fixture
def everything_endpoint(alice, everything_discovery):
    return _endpoint(alice, EVERYTHING, everything_discovery, sampling="auto")
