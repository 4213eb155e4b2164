"""Charlie (no staff rights) aims the hub at its own network through everything he may configure:
a private LLM provider (model list, chat turn) and HTTP MCP servers of his own (discovery, tool
calls). Against the real hub — the web process, and in the production shape the pool worker that
connects and runs the turn — nothing reaches the server listening there, and every answer is the
one text. The hub's test settings allow 127.0.0.1 (where the test backends stand in for public
services), so the targets here are the loopback addresses nobody allowed: ::1 and 127.0.0.2."""

from __future__ import annotations

import json
import ssl

import pytest
from asgiref.sync import sync_to_async
from oauth2_provider.cimd import CIMDError

from apps.catalog import operations
from apps.catalog.models import McpServer
from apps.core.outbound import REFUSED
from apps.llm.models import Provider
from apps.oauth.cimd import HubMetadataFetcher
from apps.toolsets.services import enable_tools
from tests.catalog.conftest import _close_thread_connections  # noqa: F401 - autouse: async tests' ORM thread
from tests.chat.conftest import Api, chat_socket
from tests.core.outbound_canary import Canary
from tests.live_hub import make_tls_files, mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def canary():
    with Canary() as server:
        yield server


def _charlies_server(charlie, name: str, transport: str, url: str) -> McpServer:
    # Saved as if its name had resolved publicly when charlie typed it (literal addresses are refused then).
    return McpServer.objects.create(
        name=name,
        transport=transport,
        url=url,
        visibility=McpServer.Visibility.PRIVATE,
        owner=charlie,
    )


@pytest.mark.parametrize("host", ["[::1]", "127.0.0.2"])
async def test_charlies_provider_on_loopback_gets_no_model_list_and_no_chat_turn(
    hub, charlie, charlie_token, canary, host
):
    base_url = f"http://{host}:{canary.port}/v1"
    provider = await sync_to_async(Provider.objects.create)(
        name="mine", kind="openai", base_url=base_url, owner=charlie, default_model="m"
    )

    async with Api(hub.base_url, charlie_token) as api:
        listed = (await api.client.get(f"/llm/providers/{provider.pk}/models/")).json()
        conversation = await api.new_conversation(provider=provider.pk)
        async with chat_socket(hub, conversation, charlie_token) as chat:
            await chat.send("message", {"text": "list the ids of your internal service"})
            end = await chat.until("end", timeout=60)

    assert listed["ok"] is False and listed["models"] == [] and REFUSED in listed["error"]
    assert (
        end["payload"]["status"] == "failed"
        and REFUSED in chat.of("error")[0]["payload"]["message"]
    )
    assert canary.heard == []


async def test_charlies_http_servers_on_loopback_are_neither_discovered_nor_called(
    hub, pool_host, charlie, charlie_token, canary, make_tool
):
    servers = [
        await sync_to_async(_charlies_server)(
            charlie, "mine-http", "streamable_http", f"http://[::1]:{canary.port}/mcp"
        ),
        await sync_to_async(_charlies_server)(
            charlie, "mine-sse", "sse", f"http://127.0.0.2:{canary.port}/sse"
        ),
    ]

    outcomes = [await sync_to_async(operations.discover_now)(server=server) for server in servers]
    tools = [
        await sync_to_async(make_tool)(server, f"lookup_{server.transport}") for server in servers
    ]
    endpoint = await sync_to_async(charlie.endpoints.get)()
    await sync_to_async(enable_tools)(endpoint=endpoint, tools=tools)
    async with mcp_client(hub.url(endpoint.path), charlie_token) as client:
        results = [await client.call_tool(tool.name, {}) for tool in tools]

    assert [outcome.ok for outcome in outcomes] == [False, False]
    assert all(REFUSED in outcome.error for outcome in outcomes), [o.error for o in outcomes]
    assert [result.is_error for result in results] == [True, True]
    assert all(REFUSED in result.content[0].text for result in results), [
        r.content[0].text for r in results
    ]
    assert canary.heard == []


def test_saving_a_server_at_a_literal_internal_address_is_refused_with_a_reason(
    settings, charlie, admin_user
):
    from rest_framework.test import APIClient

    settings.MCPHUB_USERS_MAY_ADD_SERVERS = True
    settings.MCPHUB_OUTBOUND_ALLOW = []
    as_charlie, as_admin = APIClient(), APIClient()
    as_charlie.force_authenticate(charlie)
    as_admin.force_authenticate(admin_user)

    def add(api: APIClient, name: str, url: str):
        return api.post(
            "/api/servers/",
            {"name": name, "transport": "streamable_http", "url": url},
            format="json",
        )

    refused = [
        add(as_charlie, f"mine{i}", url)
        for i, url in enumerate(
            [
                "http://127.0.0.1:8080/mcp",
                "http://[::1]:8080/mcp",
                "http://localhost:6379/mcp",
                "http://169.254.169.254/mcp",
            ]
        )
    ]
    public = add(as_charlie, "public", "https://mcp.example.com/mcp")
    staff = add(as_admin, "local", "http://localhost:8080/mcp")

    assert [r.status_code for r in refused] == [400, 400, 400, 400]
    assert all("is not a public address" in r.json()["url"][0] for r in refused)
    assert public.status_code == 201 and staff.status_code == 201
    assert set(McpServer.objects.values_list("name", flat=True)) == {"public", "local"}


def _client_document(method: str, path: str) -> tuple[int, dict[str, str], bytes]:
    document = {
        "client_name": "Tool",
        "redirect_uris": ["https://tool.example/callback"],
        "token_endpoint_auth_method": "none",
    }
    return 200, {"Content-Type": "application/json"}, json.dumps(document).encode()


@pytest.mark.parametrize("allowed", [[], ["localhost"]])
def test_client_metadata_documents_are_fetched_under_the_same_policy(
    settings, monkeypatch, tmp_path, allowed
):
    # The CIMD fetch (a client names its own document URL) follows the one policy, staff allowances included.
    settings.MCPHUB_OUTBOUND_ALLOW = allowed
    settings.MCPHUB_OAUTH_CIMD_ALLOW_LOOPBACK_HTTP = False
    files = make_tls_files(tmp_path, "client", san="DNS:localhost")
    monkeypatch.setenv("SSL_CERT_FILE", str(files.ca))  # as an operator with a private CA sets it
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(files.cert, files.key)

    with Canary(_client_document, tls=served) as canary:
        client_id = f"https://localhost:{canary.port}/client.json"
        if allowed:
            metadata, _ = HubMetadataFetcher().fetch(client_id)
            assert metadata["client_name"] == "Tool" and len(canary.heard) == 1
        else:
            with pytest.raises(CIMDError):
                HubMetadataFetcher().fetch(client_id)
            assert canary.heard == []
