"""OAuth tests: the session's live hub, the echo server on alice's and bob's endpoints."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.catalog.models import McpServer
from apps.toolsets.services import enable_tools
from tests.gateway.conftest import (  # noqa: F401 - fixtures shared with the gateway tests
    _close_thread_connections,
    alice_endpoint,
    alice_hub_token,
    anyio_backend,
    echo_discovery,
    echo_server,
)


@pytest.fixture
def bob_endpoint(bob, request):
    """Bob's endpoint serves the same echo tools as alice's."""
    request.getfixturevalue("alice_endpoint")  # the echo server, in the catalog
    endpoint = bob.endpoints.get()
    enable_tools(endpoint=endpoint, tools=McpServer.objects.get(name="echo").tools.all())
    return endpoint


def session_cookie(user) -> str:
    """A signed-in session for `user`, stored in the database the live hub shares."""
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


@pytest.fixture
def alice_session(alice) -> str:
    return session_cookie(alice)


@pytest.fixture(autouse=True)
def _fresh_registration_limits():
    """The registration rate limit counts in the cache: each test starts with a clean slate (only
    that key: in production shape the cache is the live hub's Redis database)."""
    from django.core.cache import cache

    cache.delete("oauth:dcr:127.0.0.1")
