from __future__ import annotations

from collections.abc import Iterator

import pytest

from apps.catalog.models import McpServer
from tests.catalog.conftest import _close_thread_connections  # noqa: F401 - autouse: async tests' ORM thread
from tests.upstream_oauth.upstream import HubBrowser, OAuthBackend


@pytest.fixture(scope="module")
def oauth_backend() -> Iterator[OAuthBackend]:
    backend = OAuthBackend()
    yield backend
    backend.stop()


@pytest.fixture
def oauth_server(transactional_db, oauth_backend) -> McpServer:
    """The OAuth backend as a shared server, marked as requiring OAuth (as discovery leaves it)."""
    return McpServer.objects.create(
        name="vault", transport="streamable_http", url=oauth_backend.url, oauth=True
    )


@pytest.fixture
def browser_of(hub):
    def open_as(user) -> HubBrowser:
        return HubBrowser(hub.base_url, user)

    return open_as
