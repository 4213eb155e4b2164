"""Staff test, discover and inspect a server from the Servers page; others may not."""

from __future__ import annotations

import sys

import pytest

from apps.catalog.models import McpServer
from tests.live_hub import SERVERS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def tiny(transactional_db) -> McpServer:
    return McpServer.objects.create(name="tiny", command=sys.executable, args=["-I", "-S", str(SERVERS / "tiny.py")])


def test_staff_test_and_discover_a_server_from_its_row(client, admin_user, tiny, pool_host):
    client.force_login(admin_user)

    tested = client.post("/servers/tiny/test/")
    discovered = client.post("/servers/tiny/discover/")
    live = client.get("/servers/tiny/live/")

    assert tested.status_code == 200 and 'id="server-tiny"' in tested.content.decode()
    assert "tiny: healthy" in tested.content.decode() or "tiny: degraded" in tested.content.decode()
    assert discovered.status_code == 200 and "tools" in discovered.content.decode()
    assert tiny.tools.exists()
    assert "Live processes" in live.content.decode()


def test_a_broken_server_shows_why(client, admin_user, tiny, pool_host):
    McpServer.objects.filter(pk=tiny.pk).update(command="/nonexistent/server")
    client.force_login(admin_user)

    response = client.post("/servers/tiny/test/")

    assert "tiny: down" in response.content.decode()


def test_non_staff_cannot_operate_servers(client, alice, tiny):
    client.force_login(alice)

    assert client.post("/servers/tiny/test/").status_code == 403
    assert client.post("/servers/tiny/discover/").status_code == 403
    assert client.get("/servers/tiny/live/").status_code == 403
    assert not tiny.tools.exists()
