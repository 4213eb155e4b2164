"""Connecting a backend that requires OAuth: discovery marks it, each user signs in once through
the hub (PKCE, state bound to their session), tokens are stored per user and encrypted."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from django.db import connection

from apps.catalog import operations
from apps.catalog.models import McpServer
from apps.credentials.upstream.models import UpstreamOAuthClient, UpstreamOAuthGrant
from tests.upstream_oauth.upstream import csrf

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_discovery_marks_a_backend_answering_401_as_requiring_oauth(
    pool_host, oauth_backend, admin_user, client
):
    server = McpServer.objects.create(
        name="vault", transport="streamable_http", url=oauth_backend.url
    )

    outcome = operations.discover_now(server=server)

    server.refresh_from_db()
    assert not outcome.ok and "Requires OAuth" in outcome.error
    assert server.oauth and server.status == McpServer.Status.DOWN
    assert "Connect on the Tools page" in server.last_error
    client.force_login(admin_user)
    assert client.get("/api/servers/vault/").json()["oauth"] is True
    assert "OAuth: per-user sign-in" in client.get("/servers/").content.decode()


def test_a_marked_server_waits_for_a_staff_sign_in_instead_of_failing(
    pool_host, oauth_server, admin_user
):
    outcome = operations.discover_now(server=oauth_server, user=admin_user)

    oauth_server.refresh_from_db()
    assert (
        "requires OAuth: it is discovered and checked with the sign-in of the staff user"
        in outcome.error
    )
    assert (
        oauth_server.status == McpServer.Status.UNKNOWN and "connect it" in oauth_server.last_error
    )


def test_a_backend_without_oauth_is_not_marked(pool_host, admin_user):
    server = McpServer.objects.create(
        name="nowhere", transport="streamable_http", url="http://127.0.0.1:9/mcp"
    )

    operations.discover_now(server=server)

    server.refresh_from_db()
    assert not server.oauth and "Requires OAuth" not in server.last_error


def test_alice_connects_with_her_own_account(oauth_server, oauth_backend, alice, browser_of):
    browser = browser_of(alice)
    assert "not connected" in browser.tools_page()
    assert browser.http.get("/api/servers/vault/my-oauth/").json()["state"] == "not_connected"

    answer = browser.authorize("vault", subject="alice@vault")

    assert answer.headers["location"].startswith("/tools/")
    assert browser.messages(answer) == ["Connected vault with your account."]
    grant = UpstreamOAuthGrant.objects.get(user=alice, server=oauth_server)
    assert grant.tokens["access_token"].startswith("at-") and grant.tokens[
        "refresh_token"
    ].startswith("rt-")
    assert not grant.broken and grant.expires_at is not None and "mcp" in grant.scope
    backend_grant = next(
        g for g in oauth_backend.stats()["grants"] if g["subject"] == "alice@vault"
    )
    assert (
        backend_grant["resource"] == oauth_backend.url
    )  # RFC 8707: the token is bound to this backend
    page = browser.tools_page()
    assert 'id="connection-vault"' in page and "connected" in page and "Disconnect" in page
    api = browser.http.get("/api/servers/vault/my-oauth/").text
    assert '"state":"connected"' in api and '"scope":"mcp offline_access"' in api
    for secret in (grant.tokens["access_token"], grant.tokens["refresh_token"]):
        assert secret not in page and secret not in api


def test_tokens_and_client_secret_are_encrypted_at_rest(oauth_server, alice, browser_of):
    browser_of(alice).authorize("vault", subject="alice@vault")
    grant = UpstreamOAuthGrant.objects.get(user=alice)
    client = UpstreamOAuthClient.objects.get(server=oauth_server)
    with connection.cursor() as cursor:
        cursor.execute("SELECT tokens FROM credentials_upstreamoauthgrant")
        raw_tokens = cursor.fetchone()[0]
        cursor.execute("SELECT client_info FROM credentials_upstreamoauthclient")
        raw_client = cursor.fetchone()[0]
    assert (
        grant.tokens["access_token"] not in raw_tokens
        and grant.tokens["refresh_token"] not in raw_tokens
    )
    assert (
        client.client_info["client_secret"]
        and client.client_info["client_secret"] not in raw_client
    )


def test_the_hub_registers_once_per_backend(oauth_server, oauth_backend, alice, bob, browser_of):
    before = oauth_backend.stats()["clients"]
    browser_of(alice).authorize("vault", subject="alice@vault")
    browser_of(bob).authorize("vault", subject="bob@vault")

    assert oauth_backend.stats()["clients"] == before + 1
    assert UpstreamOAuthClient.objects.filter(server=oauth_server).count() == 1


def test_a_denied_sign_in_is_shown_and_stores_nothing(oauth_server, alice, browser_of):
    browser = browser_of(alice)

    answer = browser.authorize("vault", subject=None, deny=True)

    assert browser.messages(answer) == ["vault did not grant access: access_denied"]
    assert not UpstreamOAuthGrant.objects.filter(user=alice).exists()


def test_a_callback_not_started_in_this_session_is_refused(oauth_server, alice, bob, browser_of):
    """A code meant for bob's browser, replayed in alice's session (or a forged state), gets nothing."""
    state = parse_qs(urlparse(browser_of(bob).authorization_url("vault")).query)["state"][0]
    alices = browser_of(alice)

    answer = alices.callback(f"/oauth/upstream/callback/?code=stolen&state={state}")

    assert alices.messages(answer) == [
        "This sign-in was not started from this browser session, or it expired: press Connect again."
    ]
    assert not UpstreamOAuthGrant.objects.exists()


def test_charlie_cannot_connect_a_server_he_cannot_see(oauth_server, alice, charlie, browser_of):
    oauth_server.visibility, oauth_server.owner = McpServer.Visibility.PRIVATE, alice
    oauth_server.save()
    browser = browser_of(charlie)

    assert 'id="connection-vault"' not in browser.tools_page()
    assert browser.start_connect("vault").status_code == 404
    assert browser.http.get("/api/servers/vault/my-oauth/").status_code == 404


def test_disconnect_forgets_the_grant_and_revokes_it_at_the_backend(
    oauth_server, oauth_backend, alice, browser_of
):
    browser = browser_of(alice)
    browser.authorize("vault", subject="alice-leaving@vault")

    answer = browser.http.post(
        "/servers/vault/disconnect/", data={"csrfmiddlewaretoken": csrf(browser.tools_page())}
    )

    assert browser.messages(answer) == [
        "Disconnected vault: your calls to it stop until you connect it again."
    ]
    assert not UpstreamOAuthGrant.objects.filter(user=alice).exists()
    assert all(
        g["revoked"]
        for g in oauth_backend.stats()["grants"]
        if g["subject"] == "alice-leaving@vault"
    )


def test_the_authorization_request_carries_pkce_s256_state_and_the_resource(
    oauth_server, oauth_backend, alice, browser_of
):
    url = browser_of(alice).authorization_url("vault")

    query = {key: values[0] for key, values in parse_qs(urlparse(url).query).items()}
    assert url.startswith(f"{oauth_backend.base}/authorize?")
    assert query["response_type"] == "code" and query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43 and len(query["state"]) >= 43
    assert query["resource"] == oauth_backend.url
    assert query["redirect_uri"].endswith("/oauth/upstream/callback/")
    assert "code_verifier" not in url


def test_disconnect_through_the_api(oauth_server, alice, browser_of):
    browser = browser_of(alice)
    browser.authorize("vault", subject="alice-api@vault")
    csrf_token = browser.http.cookies.get("csrftoken")

    deleted = browser.http.delete(
        "/api/servers/vault/my-oauth/", headers={"X-CSRFToken": csrf_token}
    )

    assert deleted.status_code == 204
    assert browser.http.get("/api/servers/vault/my-oauth/").json()["state"] == "not_connected"
    assert not UpstreamOAuthGrant.objects.filter(user=alice).exists()
