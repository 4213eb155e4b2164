"""A backend that is not MCP-authorization-aware — an MCP server in front of a plain OAuth 2 API
taking `Authorization: Bearer …` — gets each user's own token through the header template
`Bearer ${oauth:NAME}`. The API's authorization server is a real OpenID Connect provider (npm
oidc-provider) where an administrator registered the hub's app; users connect through it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator

import pytest
import requests
from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError

from apps.catalog import operations
from apps.catalog.importing import export_servers, import_mcp_json
from apps.catalog.models import McpServer
from apps.credentials.upstream.models import UpstreamOAuthGrant
from apps.toolsets.services import enable_tools
from tests.live_hub import SERVERS, _accepts, free_port
from tests.sso.conftest import Idp
from tests.upstream_oauth.upstream import csrf, provider_with_app, register_app, whoami
from tests.waiting import eventually

pytestmark = [pytest.mark.django_db(transaction=True)]

APP_ID, APP_SECRET = "hub-api-app", "api-app-secret"
TOKEN_TTL = 6  # seconds: the hub refreshes a third of a lifetime this short before it ends
PEOPLE = ("admin-at-api", "alice-at-api", "bob-at-api", "bob-leaving")


@pytest.fixture(scope="module")
def provider(hub) -> Iterator[Idp]:
    """The API's authorization server, with the hub's app registered by hand (no registration)."""
    idp = provider_with_app(hub, APP_ID, APP_SECRET, PEOPLE, access_token_ttl=TOKEN_TTL)
    yield idp
    idp.stop()


@pytest.fixture(scope="module")
def api(provider) -> Iterator[str]:
    """tests/servers/bearer_api.py: checks every request's bearer token at the provider."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVERS / "bearer_api.py"), str(port), f"{provider.issuer}/me"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    eventually(lambda: _accepts(port), timeout=30, what="the bearer API to start")
    yield f"http://127.0.0.1:{port}"
    process.kill()
    process.wait()


@pytest.fixture
def api_server(hub, provider, api, admin_user, alice, bob, charlie, browser_of) -> McpServer:
    """The API's MCP server with its header template and the app, discovered with the admin's
    connection, enabled on alice's, bob's and charlie's endpoints."""
    server = McpServer(
        name="api",
        transport="streamable_http",
        url=f"{api}/mcp",
        headers={"Authorization": "Bearer ${oauth:api}"},
    )
    server.full_clean()
    server.save()
    register_app(server, provider, APP_ID, APP_SECRET, "openid profile")
    connect(browser_of, admin_user, "admin-at-api")
    eventually(
        lambda: server.tools.filter(name="whoami").exists(),
        timeout=60,
        what=lambda: f"discovery; last error: {McpServer.objects.get(pk=server.pk).last_error}",
    )
    for user in (alice, bob, charlie):
        enable_tools(endpoint=user.endpoints.get(), tools=server.tools.all())
    return server


def connect(browser_of, user, account: str) -> list[str]:
    """Press Connect, sign in at the provider as `account`; the hub's flash messages."""
    return browser_of(user).sign_in_at_provider("api", account)[1]


async def connect_async(browser_of, user, account: str) -> list[str]:
    return await sync_to_async(connect)(browser_of, user, account)


def test_the_authorization_request_names_the_app_and_no_resource(
    api_server, provider, alice, browser_of
):
    url = browser_of(alice).authorization_url("api")

    assert url.startswith(f"{provider.issuer}/auth?")
    assert f"client_id={APP_ID}" in url and "code_challenge_method=S256" in url
    assert "resource=" not in url  # a plain API: no RFC 8707 resource to bind the token to
    assert "scope=openid+profile" in url


@pytest.mark.anyio
async def test_each_user_calls_with_their_own_token(hub, api_server, alice, bob, browser_of):
    assert await connect_async(browser_of, alice, "alice-at-api") == [
        "Connected api with your account."
    ]
    await connect_async(browser_of, bob, "bob-at-api")

    alices, bobs = await asyncio.gather(whoami(hub, alice), whoami(hub, bob))

    assert alices[0]["sub"] == "alice-at-api" and bobs[0]["sub"] == "bob-at-api"
    assert alices[0]["token"] != bobs[0]["token"]


@pytest.mark.anyio
async def test_someone_who_never_connected_is_told_to_connect_first(hub, api_server, charlie):
    result, text = await whoami(hub, charlie)

    assert result is None
    assert "Server api needs your own OAuth sign-in: connect api at " in text


@pytest.mark.anyio
async def test_an_expiring_token_is_refreshed_before_the_call(hub, api_server, alice, browser_of):
    await connect_async(browser_of, alice, "alice-at-api")
    first, _ = await whoami(hub, alice)

    await asyncio.sleep(TOKEN_TTL + 1)  # past expiry: the provider no longer takes the token
    second, text = await whoami(hub, alice)

    assert second is not None, text
    assert first["sub"] == second["sub"] == "alice-at-api"
    assert first["token"] != second["token"]
    grant = await sync_to_async(UpstreamOAuthGrant.objects.get)(user=alice)
    assert grant.refreshed_at is not None and not grant.broken


@pytest.mark.anyio
async def test_a_user_disabled_at_the_provider_is_told_to_reconnect_and_can(
    hub, api_server, provider, alice, bob, browser_of
):
    await connect_async(browser_of, alice, "alice-at-api")
    await connect_async(browser_of, bob, "bob-leaving")
    assert (await whoami(hub, bob))[0]["sub"] == "bob-leaving"

    accounts = {name: {"email": f"{name}@api.test"} for name in PEOPLE}
    provider.accounts(**{**accounts, "bob-leaving": {"disabled": True}})
    result, text = await whoami(hub, bob)

    assert result is None
    assert "refused your OAuth sign-in (revoked or expired): reconnect api at " in text
    assert (await sync_to_async(UpstreamOAuthGrant.objects.get)(user=bob)).broken
    assert (await whoami(hub, alice))[0]["sub"] == "alice-at-api"

    provider.accounts(**accounts)  # back at the provider: Reconnect, and calls work again
    await connect_async(browser_of, bob, "bob-leaving")
    assert (await whoami(hub, bob))[0]["sub"] == "bob-leaving"


def test_disconnect_revokes_the_token_at_the_provider(api_server, provider, alice, browser_of):
    connect(browser_of, alice, "alice-at-api")
    token = UpstreamOAuthGrant.objects.get(user=alice).tokens["access_token"]
    userinfo = f"{provider.issuer}/me"
    assert requests.get(userinfo, headers={"Authorization": f"Bearer {token}"}).status_code == 200
    browser = browser_of(alice)

    answer = browser.http.post(
        "/servers/api/disconnect/", data={"csrfmiddlewaretoken": csrf(browser.tools_page())}
    )

    assert browser.messages(answer)[0].startswith("Disconnected api")
    assert requests.get(userinfo, headers={"Authorization": f"Bearer {token}"}).status_code == 401


def test_discovery_without_any_connection_says_who_must_connect(db, api, provider):
    server = McpServer.objects.create(
        name="api",
        transport="streamable_http",
        url=f"{api}/mcp",
        headers={"Authorization": "Bearer ${oauth:api}"},
    )

    outcome = operations.discover_now(server=server)

    assert not outcome.ok
    assert "there is no OAuth app to connect it with" in outcome.error  # no app yet


def test_the_template_is_shown_exported_and_imported_as_written(db, admin_client):
    server = McpServer.objects.create(
        name="api",
        transport="streamable_http",
        url="https://api.example.com/mcp",
        headers={"Authorization": "Bearer ${oauth:api}", "X-Secret": "s3cret"},
    )

    exported = export_servers()
    page = admin_client.get(f"/admin/catalog/mcpserver/{server.pk}/change/").content.decode()

    assert '"Authorization": "Bearer ${oauth:api}"' in exported.text
    assert exported.variables == ("MCP_API_X_SECRET",) and "s3cret" not in exported.text
    assert "Bearer ${oauth:api}" in page and "s3cret" not in page
    server.delete()
    import_mcp_json(text=exported.text, environ={"MCP_API_X_SECRET": "other"})
    headers = McpServer.objects.get(name="api").headers
    assert headers == {"Authorization": "Bearer ${oauth:api}", "X-Secret": "other"}


@pytest.mark.parametrize(
    "headers, url, error",
    [
        ({"Authorization": "Bearer ${oauth:github}"}, "", "must name this server"),
        ({"Authorization": "Bearer ${oauth:api} extra"}, "", "write the whole value as"),
        ({}, "https://api.example.com/mcp?t=${oauth:api}", "may only be a header value"),
    ],
)
def test_a_misplaced_template_is_refused_at_save(db, headers, url, error):
    server = McpServer(
        name="api",
        transport="streamable_http",
        url=url or "https://api.example.com/mcp",
        headers=headers,
    )

    with pytest.raises(ValidationError, match=error):
        server.full_clean()
