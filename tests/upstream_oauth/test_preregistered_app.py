"""A backend whose authorization server offers no dynamic registration: an administrator registers
the hub's app there by hand and enters it in the admin; users connect exactly as with a registered
client (PKCE, state, the resource indicator), each with their own account; refresh and revoke go
through the app's credentials."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlparse

import pytest
from asgiref.sync import sync_to_async
from auditlog.models import LogEntry
from django.db import connection

from apps.catalog.models import McpServer
from apps.credentials.upstream import services as upstream_services
from apps.credentials.upstream.models import UpstreamOAuthApp, UpstreamOAuthGrant
from apps.toolsets.services import enable_tools
from tests.upstream_oauth.test_upstream_refresh import _due
from tests.upstream_oauth.upstream import OAuthBackend, connect, csrf, whoami
from tests.waiting import eventually

pytestmark = [pytest.mark.django_db(transaction=True)]

CLIENT_ID, CLIENT_SECRET = "hub-app", "app-secret-typed-by-an-admin"


@pytest.fixture(scope="module")
def closed_backend() -> Iterator[OAuthBackend]:
    """The OAuth-protected backend with dynamic registration turned off."""
    backend = OAuthBackend(registration=False)
    yield backend
    backend.stop()


def app_form(backend: OAuthBackend, server: McpServer, **fields: str) -> dict[str, str]:
    return {
        "server": str(server.pk),
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "token_auth_method": "client_secret_post",
        "scopes": "",
        "metadata_url": f"{backend.base}/.well-known/oauth-authorization-server",
        "authorization_endpoint": "",
        "token_endpoint": "",
        "revocation_endpoint": "",
        **fields,
    }


@pytest.fixture
def vault(hub, closed_backend, admin_user, client) -> McpServer:
    """The backend as a shared server with the app entered in the admin, registered at the backend
    with the live hub's callback."""
    server = McpServer.objects.create(
        name="vault", transport="streamable_http", url=closed_backend.url
    )
    closed_backend.register_client(
        CLIENT_ID, CLIENT_SECRET, f"{hub.base_url}/oauth/upstream/callback/"
    )
    client.force_login(admin_user)
    saved = client.post(
        "/admin/credentials/upstreamoauthapp/add/", app_form(closed_backend, server)
    )
    assert saved.status_code == 302, saved.content.decode()[-3000:]
    return McpServer.objects.get(pk=server.pk)


def test_the_admin_enters_the_app_once_and_its_secret_stays_hidden(vault, closed_backend, client):
    app = UpstreamOAuthApp.objects.get(server=vault)
    assert vault.oauth  # users see Connect for it now
    assert app.authorization_server["token_endpoint"] == f"{closed_backend.base}/token"
    assert app.authorization_server.get("registration_endpoint") is None
    with connection.cursor() as cursor:
        cursor.execute("SELECT client_secret FROM credentials_upstreamoauthapp")
        assert CLIENT_SECRET not in cursor.fetchone()[0]
    change = f"/admin/credentials/upstreamoauthapp/{app.pk}/change/"
    page = client.get(change).content.decode()
    assert CLIENT_SECRET not in page and "/oauth/upstream/callback/" in page
    listing = client.get("/admin/credentials/upstreamoauthapp/").content.decode()
    assert closed_backend.base in listing  # the issuer read from the metadata

    audit = LogEntry.objects.get(content_type__model="upstreamoauthapp")
    assert CLIENT_SECRET not in str(audit.changes) and "client_secret" in str(audit.changes)

    kept = client.post(change, app_form(closed_backend, vault, client_secret="", scopes="mcp"))
    assert kept.status_code == 302
    app.refresh_from_db()
    assert (app.client_secret, app.scopes) == (CLIENT_SECRET, "mcp")


@pytest.mark.parametrize(
    "fields, error",
    [
        ({"metadata_url": "http://127.0.0.1:9/nothing"}, "did not answer"),
        ({"metadata_url": "{base}/admin/stats"}, "is not authorization server metadata"),
        ({"metadata_url": ""}, "Enter the authorization server&#x27;s metadata URL, or its"),
        ({"token_endpoint": "{base}/token"}, "Enter the metadata URL or the endpoints, not both"),
        (
            {"client_secret": "", "token_auth_method": "client_secret_basic"},
            "needs its client secret",
        ),
    ],
)
def test_an_unusable_app_is_refused_with_the_reason_and_changes_nothing(
    closed_backend, admin_client, fields, error
):
    server = McpServer.objects.create(
        name="vault", transport="streamable_http", url=closed_backend.url
    )
    form = app_form(closed_backend, server)
    form.update({k: v.format(base=closed_backend.base) for k, v in fields.items()})

    response = admin_client.post("/admin/credentials/upstreamoauthapp/add/", form)

    assert response.status_code == 200 and error in response.content.decode()
    assert not UpstreamOAuthApp.objects.exists()
    assert not McpServer.objects.get(pk=server.pk).oauth


def test_two_users_connect_their_own_accounts_through_the_app(
    vault, closed_backend, alice, bob, browser_of
):
    url = browser_of(alice).authorization_url("vault")
    query = {key: values[0] for key, values in parse_qs(urlparse(url).query).items()}
    assert query["client_id"] == CLIENT_ID and query["code_challenge_method"] == "S256"
    assert query["resource"] == closed_backend.url and len(query["state"]) >= 43

    for user, subject in ((alice, "alice@vault"), (bob, "bob@vault")):
        browser = browser_of(user)
        answer = browser.authorize("vault", subject=subject)
        assert browser.messages(answer) == ["Connected vault with your account."]

    stats = closed_backend.stats()
    assert stats["clients"] == 1  # the hand-registered one: the hub registered nothing
    grants = {g["subject"]: g for g in stats["grants"]}
    assert grants["alice@vault"]["client_id"] == grants["bob@vault"]["client_id"] == CLIENT_ID
    assert grants["alice@vault"]["resource"] == closed_backend.url
    tokens = {g.user_id: g.tokens["access_token"] for g in UpstreamOAuthGrant.objects.all()}
    assert len(set(tokens.values())) == 2


def test_refresh_and_disconnect_use_the_apps_credentials(vault, closed_backend, alice, browser_of):
    browser = browser_of(alice)
    browser.authorize("vault", subject="alice-refresh@vault")
    grant = _due(UpstreamOAuthGrant.objects.get(user=alice))

    token = upstream_services.access_token(server=vault, user_id=alice.pk)

    assert token != grant.tokens["access_token"]
    assert closed_backend.stats()["refreshes"]["alice-refresh@vault"] == 1
    answer = browser.http.post(
        "/servers/vault/disconnect/", data={"csrfmiddlewaretoken": csrf(browser.tools_page())}
    )
    assert browser.messages(answer) == [
        "Disconnected vault: your calls to it stop until you connect it again."
    ]
    assert all(
        g["revoked"]
        for g in closed_backend.stats()["grants"]
        if g["subject"] == "alice-refresh@vault"
    )


def test_a_rotated_client_secret_applies_to_existing_grants(
    vault, closed_backend, hub, alice, browser_of, client
):
    browser_of(alice).authorize("vault", subject="alice-rotated@vault")
    closed_backend.register_client(
        CLIENT_ID, "rotated-secret", f"{hub.base_url}/oauth/upstream/callback/"
    )
    app = UpstreamOAuthApp.objects.get(server=vault)
    client.post(
        f"/admin/credentials/upstreamoauthapp/{app.pk}/change/",
        app_form(closed_backend, vault, client_secret="rotated-secret"),
    )
    grant = _due(UpstreamOAuthGrant.objects.get(user=alice))

    token = upstream_services.access_token(server=vault, user_id=alice.pk)

    assert token.startswith("at-") and token != grant.tokens["access_token"]
    assert closed_backend.stats()["refreshes"]["alice-rotated@vault"] == 1


def test_deleting_the_app_forgets_its_connections_and_says_what_is_missing(
    vault, alice, browser_of, client
):
    browser = browser_of(alice)
    browser.authorize("vault", subject="alice@vault")
    app = UpstreamOAuthApp.objects.get(server=vault)

    client.post(f"/admin/credentials/upstreamoauthapp/{app.pk}/delete/", {"post": "yes"})

    assert not UpstreamOAuthApp.objects.exists() and not UpstreamOAuthGrant.objects.exists()
    with pytest.raises(upstream_services.CredentialsMissing, match="needs your own OAuth sign-in"):
        upstream_services.access_token(server=vault, user_id=alice.pk)
    answer = browser.start_connect("vault")
    assert browser.messages(answer) == [
        f"Could not connect vault: the authorization server {vault.url.removesuffix('/mcp')} "
        "offers no dynamic client registration: an administrator registers an app there and "
        "enters it in the admin (Upstream OAuth apps)"
    ]


@pytest.mark.anyio
async def test_calls_reach_the_backend_with_each_users_token(
    hub, vault, closed_backend, admin_user, alice, bob, browser_of
):
    await connect(browser_of, admin_user, "admin@vault")  # a staff sign-in discovers it
    await sync_to_async(
        lambda: eventually(
            lambda: vault.tools.filter(name="whoami").exists(), timeout=60, what="discovery"
        )
    )()
    for user in (alice, bob):
        await sync_to_async(enable_tools)(
            endpoint=await sync_to_async(user.endpoints.get)(), tools=vault.tools.all()
        )
    await connect(browser_of, alice, "alice@vault")
    await connect(browser_of, bob, "bob@vault")

    alices, bobs = await whoami(hub, alice), await whoami(hub, bob)

    assert (alices[0]["subject"], alices[0]["client_id"]) == ("alice@vault", CLIENT_ID)
    assert (bobs[0]["subject"], bobs[0]["client_id"]) == ("bob@vault", CLIENT_ID)
