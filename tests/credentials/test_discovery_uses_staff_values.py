"""Discovery and health checks of a shared server with user variables use the values of the staff
user who runs them (else the owner's); with nobody's values they are skipped, saying why."""

from __future__ import annotations

import pytest

from apps.catalog import operations
from apps.catalog.models import McpServer, Tool
from apps.credentials.services import save_credentials

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fresh_server(transactional_db, whoami_http_port) -> McpServer:
    server = McpServer(
        name="wfresh",
        transport=McpServer.Transport.STREAMABLE_HTTP,
        url=f"http://127.0.0.1:{whoami_http_port}/mcp",
        headers={"X-User-Token": "${user:TOKEN}"},
    )
    server.save()
    return server


def test_the_staff_user_who_discovers_uses_their_own_values(pool_host, admin_user, fresh_server):
    save_credentials(user=admin_user, server=fresh_server, values={"TOKEN": "admin-token"})

    outcome = operations.discover_now(server=fresh_server, user=admin_user)
    verdict = operations.check_health(server=fresh_server, user=admin_user)

    assert outcome.ok, outcome.error
    assert Tool.objects.filter(server=fresh_server, name="whoami").exists()
    assert verdict.status == McpServer.Status.HEALTHY


def test_without_values_discovery_is_skipped_with_a_reason_not_marked_down(
    pool_host, admin_user, fresh_server
):
    outcome = operations.discover_now(server=fresh_server, user=admin_user)
    background = operations.discover_now(server=fresh_server)
    fresh_server.refresh_from_db()

    assert (
        not outcome.ok and "admin has not filled them" in outcome.error and "TOKEN" in outcome.error
    )
    assert "has no owner whose values background checks could use" in background.error
    assert (
        fresh_server.status == McpServer.Status.UNKNOWN
        and "uses each user's own credentials" in fresh_server.last_error
    )


def test_background_checks_use_the_owners_values(pool_host, alice, fresh_server):
    fresh_server.owner = alice
    fresh_server.save()
    save_credentials(user=alice, server=fresh_server, values={"TOKEN": "alice-token"})

    assert operations.discover_now(server=fresh_server).ok
    assert operations.check_health(server=fresh_server).status == McpServer.Status.HEALTHY


def test_testing_from_the_servers_page_without_values_says_it_did_not_test(
    pool_host, client, admin_user, fresh_server
):
    client.force_login(admin_user)

    html = client.post(f"/servers/{fresh_server.name}/test/").content.decode()
    api = client.post(f"/api/servers/{fresh_server.name}/test/").json()

    assert (
        "Not tested:" in html
        and "admin has not filled them" in html
        and "Status is now" not in html
    )
    assert api["skipped"] is True and api["status"] == "unknown"
