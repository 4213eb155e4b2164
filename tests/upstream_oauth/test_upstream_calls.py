"""Two users connect one OAuth-protected backend through the hub; each one's calls reach it with
their own token, an expiring token is refreshed, a revoked grant says "reconnect", and someone who
never connected is told where to connect. Tokens never show in responses, pages, logs or exports."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command

from apps.catalog import operations
from apps.catalog.models import McpServer
from apps.credentials.upstream.models import UpstreamOAuthGrant
from apps.toolsets.services import enable_tools
from tests.upstream_oauth.upstream import OAuthBackend, connect, whoami
from tests.waiting import eventually

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.anyio]

TOKEN_TTL = 6  # seconds: the hub refreshes a third of a lifetime this short before it ends


@pytest.fixture(scope="module")
def short_lived_backend() -> Iterator[OAuthBackend]:
    backend = OAuthBackend(token_ttl=TOKEN_TTL)
    yield backend
    backend.stop()


@pytest.fixture
def vault(hub, short_lived_backend, admin_user, alice, bob, charlie, browser_of) -> McpServer:
    """The backend, discovered with the admin's own sign-in, enabled on alice's, bob's and charlie's endpoints."""
    server = McpServer.objects.create(
        name="vault", transport="streamable_http", url=short_lived_backend.url
    )
    assert "Requires OAuth" in operations.discover_now(server=server).error  # marks it
    browser_of(admin_user).authorize(
        "vault", subject="admin@vault"
    )  # discovers it with the admin's sign-in
    eventually(
        lambda: server.tools.filter(name="whoami").exists(),
        timeout=60,
        what=lambda: f"discovery; last error: {McpServer.objects.get(pk=server.pk).last_error}",
    )
    assert McpServer.objects.get(pk=server.pk).status == McpServer.Status.HEALTHY
    for user in (alice, bob, charlie):
        enable_tools(endpoint=user.endpoints.get(), tools=server.tools.all())
    return server


async def test_each_users_calls_reach_the_backend_with_their_own_token(
    hub, vault, short_lived_backend, alice, bob, browser_of
):
    await connect(browser_of, alice, "alice@vault")
    await connect(browser_of, bob, "bob@vault")

    alices, bobs = await asyncio.gather(whoami(hub, alice), whoami(hub, bob))

    assert alices[0]["subject"] == "alice@vault"
    assert bobs[0]["subject"] == "bob@vault"
    assert alices[0]["grant"] != bobs[0]["grant"]


async def test_background_health_checks_use_a_staff_users_sign_in(hub, vault):
    verdict = await sync_to_async(operations.check_health)(
        server=vault
    )  # no acting user: a beat task

    assert verdict.status == McpServer.Status.HEALTHY, verdict.reason


async def test_charlie_who_never_connected_is_told_where_to_connect(hub, vault, charlie, settings):
    result, text = await whoami(hub, charlie)

    assert result is None
    assert "Server vault needs your own OAuth sign-in: connect vault at " in text
    assert "/tools/#connections" in text


async def test_an_expiring_token_is_refreshed_before_the_call(
    hub, vault, short_lived_backend, alice, browser_of
):
    await connect(browser_of, alice, "alice@vault")
    first, _ = await whoami(hub, alice)

    await asyncio.sleep(TOKEN_TTL - 1)  # past the refresh point, before expiry
    second, _ = await whoami(hub, alice)
    await asyncio.sleep(TOKEN_TTL + 1)  # past expiry: still the same grant, refreshed again
    third, _ = await whoami(hub, alice)

    assert first["subject"] == second["subject"] == third["subject"] == "alice@vault"
    assert first["grant"] == second["grant"] == third["grant"]
    assert first["generation"] < second["generation"] < third["generation"]
    grant = await sync_to_async(UpstreamOAuthGrant.objects.get)(user=alice)
    assert grant.refreshed_at is not None and not grant.broken


async def test_a_revoked_grant_says_reconnect_and_never_borrows_another_users_token(
    hub, vault, short_lived_backend, alice, bob, browser_of
):
    await connect(browser_of, alice, "alice@vault")
    await connect(browser_of, bob, "bob@vault")
    assert (await whoami(hub, bob))[0]["subject"] == "bob@vault"

    assert short_lived_backend.revoke("bob@vault") >= 1  # (and any left from earlier tests)
    result, text = await whoami(hub, bob)
    again, again_text = await whoami(hub, bob)

    assert result is None and again is None
    assert "refused your OAuth sign-in (revoked or expired): reconnect vault at " in text
    assert "reconnect vault at " in again_text
    assert (await sync_to_async(UpstreamOAuthGrant.objects.get)(user=bob)).broken
    assert (await whoami(hub, alice))[0]["subject"] == "alice@vault"
    page = await sync_to_async(lambda: browser_of(bob).tools_page())()
    assert "reconnect needed" in page and "Reconnect" in page

    await connect(browser_of, bob, "bob@vault")
    assert (await whoami(hub, bob))[0]["subject"] == "bob@vault"


async def test_tokens_never_appear_in_api_pages_logs_or_exports(
    hub, vault, alice, admin_user, browser_of, client
):
    await connect(browser_of, alice, "alice@vault")
    await whoami(hub, alice)
    grants = await sync_to_async(list)(UpstreamOAuthGrant.objects.all())
    secrets = [t for g in grants for t in g.tokens.values() if t]
    assert len(secrets) >= 4  # the admin's and alice's access and refresh tokens

    def seen_by_people() -> str:
        client.force_login(admin_user)
        export = io.StringIO()
        call_command("mcp_export", "--include-secrets", stdout=export)
        pages = [
            client.get(path).content.decode()
            for path in ("/servers/", "/tools/", "/api/servers/", "/api/servers/vault/")
        ]
        admin_pages = [
            client.get(f"/admin/credentials/{model}/").content.decode()
            for model in ("upstreamoauthgrant", "upstreamoauthclient")
        ]
        return "\n".join(
            [export.getvalue(), *pages, *admin_pages, browser_of(alice).tools_page(), hub.log()]
        )

    everything = await sync_to_async(seen_by_people)()
    assert "vault" in everything and "alice@example.com" not in everything
    assert (
        '<a href="/admin/credentials/upstreamoauthgrant/' in everything
    )  # the admin lists the grants
    assert not [s for s in secrets if s in everything]
