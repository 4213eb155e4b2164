"""Staff test, discover and inspect a server from the Servers page; others may not."""

from __future__ import annotations

import sys

import pytest
from django.utils import timezone

from apps.catalog.models import McpServer
from tests.live_hub import SERVERS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def tiny(transactional_db) -> McpServer:
    return McpServer.objects.create(
        name="tiny", command=sys.executable, args=["-I", "-S", str(SERVERS / "tiny.py")]
    )


def test_staff_test_and_discover_a_server_from_its_row(client, admin_user, tiny, pool_host):
    client.force_login(admin_user)

    tested = client.post("/servers/tiny/test/").content.decode()
    discovered = client.post("/servers/tiny/discover/").content.decode()
    live = client.get("/servers/tiny/live/").content.decode()

    assert 'id="server-tiny"' in tested and 'class="server-panel"' in tested
    assert "Works: tiny answered in" in tested or "Works, but not well" in tested
    assert "Found " in discovered and " tools" in discovered and "New (" in discovered
    assert tiny.tools.exists()
    assert "Since the pool started" in live and "Recent stderr" in live


def test_a_broken_server_shows_why(client, admin_user, tiny, pool_host):
    McpServer.objects.filter(pk=tiny.pk).update(command="/nonexistent/server")
    client.force_login(admin_user)

    response = client.post("/servers/tiny/test/")

    assert (
        "Does not work: " in response.content.decode()
        and "Status is now Down." in response.content.decode()
    )


def test_the_live_state_of_a_down_server_is_in_plain_words(client, admin_user, tiny):
    McpServer.objects.filter(pk=tiny.pk).update(status="down")
    client.force_login(admin_user)

    live = client.get("/servers/tiny/live/").content.decode()

    assert "None open right now: the next call or test starts one" in live
    assert "Let through" in live
    assert "<dt>State</dt>" not in live and "<dt>Circuit</dt>" not in live


def test_results_sit_in_a_panel_under_the_row_not_in_the_actions_cell(client, admin_user, tiny):
    client.force_login(admin_user)

    body = client.get("/servers/tiny/live/").content.decode()

    actions = body[body.index('<td class="server-actions">') :]
    actions = actions[: actions.index("</td>")]
    assert "Connection" not in actions
    assert body.index('<tr class="server-panel"><td colspan="7">') > body.index(
        '<td class="server-actions">'
    )


def test_non_staff_cannot_operate_servers(client, alice, tiny):
    client.force_login(alice)

    assert client.post("/servers/tiny/test/").status_code == 403
    assert client.post("/servers/tiny/discover/").status_code == 403
    assert client.get("/servers/tiny/live/").status_code == 403
    assert not tiny.tools.exists()


def test_the_builtin_server_row_says_built_in_and_offers_no_checks(client, admin_user, tiny):
    from apps.gateway.hub_tools import ensure_hub_server

    ensure_hub_server()
    McpServer.objects.filter(name="tiny").update(last_checked_at=timezone.now())
    client.force_login(admin_user)

    page = client.get("/servers/").content.decode()

    hub_row = page.split('id="server-hub"')[1].split("</tbody>")[0]
    assert "built in: served by the hub itself" in hub_row and "never" not in hub_row
    assert "Test</button>" not in hub_row and "Discover now" not in hub_row
    tiny_row = page.split('id="server-tiny"')[1].split("</tbody>")[0]
    assert "just now" in tiny_row and "0 minutes" not in tiny_row
