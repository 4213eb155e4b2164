"""A backend that asks for OAuth names where its metadata and authorization server are: URLs the
backend chose. Staff added this backend, so its own origin is reachable; any other address on the
hub's network that it names is not fetched (the hub's outbound address policy)."""

from __future__ import annotations

import json

import pytest

from apps.catalog.models import McpServer
from apps.credentials.upstream import services as upstream_services
from tests.core.outbound_canary import Canary

pytestmark = [pytest.mark.django_db]


def _challenging(metadata_url: str, *, authorization_server: str | None = None):
    """A backend answering every MCP request with a Bearer challenge naming `metadata_url`; its own
    well-known document (when `authorization_server`) names that authorization server."""

    def answer(method: str, path: str) -> tuple[int, dict[str, str], bytes]:
        if path.startswith("/.well-known/oauth-protected-resource") and authorization_server:
            document = {
                "resource": "http://placeholder/mcp",
                "authorization_servers": [authorization_server],
            }
            return 200, {"Content-Type": "application/json"}, json.dumps(document).encode()
        if path == "/mcp":
            return 401, {"WWW-Authenticate": f'Bearer resource_metadata="{metadata_url}"'}, b""
        return 404, {}, b""

    return answer


@pytest.fixture
def no_allowance(settings) -> None:
    settings.MCPHUB_OUTBOUND_ALLOW = []


def test_a_loopback_metadata_url_in_the_challenge_is_not_fetched(no_allowance):
    with Canary() as internal, Canary() as backend:
        backend.answer = _challenging(
            f"http://127.0.0.1:{internal.port}/.well-known/oauth-protected-resource"
        )
        server = McpServer.objects.create(
            name="vault", transport="streamable_http", url=f"http://127.0.0.1:{backend.port}/mcp"
        )

        with pytest.raises(upstream_services.ConnectFailed) as failed:
            upstream_services.server_auth(server=server)

    assert "publishes no protected resource metadata" in str(failed.value)
    assert internal.heard == []
    # The backend's own well-known URLs (its origin, which staff chose) were still asked.
    assert {h.path for h in backend.heard} >= {"/mcp", "/.well-known/oauth-protected-resource/mcp"}


def test_an_authorization_server_on_another_loopback_port_is_not_fetched(no_allowance):
    with Canary() as internal, Canary() as backend:
        own_metadata = f"http://127.0.0.1:{backend.port}/.well-known/oauth-protected-resource"
        backend.answer = _challenging(
            own_metadata, authorization_server=f"http://[::1]:{internal.port}/"
        )
        server = McpServer.objects.create(
            name="vault", transport="streamable_http", url=f"http://127.0.0.1:{backend.port}/mcp"
        )

        with pytest.raises(upstream_services.ConnectFailed) as failed:
            upstream_services.server_auth(server=server)

    assert "publishes no metadata" in str(failed.value)
    assert internal.heard == []
