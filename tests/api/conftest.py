"""API clients for the personas: each authenticates with a real hub token over `Authorization: Bearer`."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from apps.accounts.services import create_access_token
from apps.toolsets.services import enable_tools


def _client_for(user) -> APIClient:
    client = APIClient()
    _, raw = create_access_token(user=user, name="api tests")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def as_alice(alice) -> APIClient:
    return _client_for(alice)


@pytest.fixture
def as_bob(bob) -> APIClient:
    return _client_for(bob)


@pytest.fixture
def as_charlie(charlie) -> APIClient:
    return _client_for(charlie)


@pytest.fixture
def as_admin(admin_user) -> APIClient:
    return _client_for(admin_user)


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()


@pytest.fixture
def alice_endpoint(alice):
    return alice.endpoints.get(is_default=True)


@pytest.fixture
def time_tools(global_server, make_tool):
    """The global `time` server's tools: now (100 tokens), convert (300), zones (600)."""
    return {
        "now": make_tool(global_server, "now", 100),
        "convert": make_tool(global_server, "convert", 300),
        "zones": make_tool(global_server, "zones", 600),
    }


@pytest.fixture
def alice_enabled(alice_endpoint, time_tools):
    enable_tools(endpoint=alice_endpoint, tools=[time_tools["now"]])
    return alice_endpoint
