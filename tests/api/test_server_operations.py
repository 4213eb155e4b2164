"""Staff test a server's connection, discover it now and read its stderr, through a running hub."""

from __future__ import annotations

import sys

import httpx2
import pytest

from apps.accounts.services import create_access_token
from apps.catalog.models import McpServer
from tests.live_hub import SERVERS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def staff_token(admin_user) -> str:
    return create_access_token(user=admin_user, name="ops")[1]


@pytest.fixture
def tiny(transactional_db) -> McpServer:
    return McpServer.objects.create(
        name="tiny", command=sys.executable, args=["-I", "-S", str(SERVERS / "tiny.py")]
    )


def api(hub, token: str, method: str, path: str) -> httpx2.Response:
    with httpx2.Client(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        return http.request(method, hub.url(path))


def test_staff_test_the_connection_and_the_verdict_is_recorded(hub, staff_token, tiny):
    response = api(hub, staff_token, "POST", "/api/servers/tiny/test/")

    assert response.status_code == 200
    assert response.json()["status"] in ("healthy", "degraded")
    assert response.json()["round_trip_ms"] > 0
    tiny.refresh_from_db()
    assert tiny.status == response.json()["status"] and tiny.last_ok_at is not None


def test_a_broken_command_is_reported_down_with_the_reason(hub, staff_token, tiny):
    McpServer.objects.filter(pk=tiny.pk).update(command="/nonexistent/server")

    response = api(hub, staff_token, "POST", "/api/servers/tiny/test/")

    assert response.json()["status"] == "down"
    assert response.json()["reason"]


def test_discover_now_fills_the_catalog(hub, staff_token, tiny):
    response = api(hub, staff_token, "POST", "/api/servers/tiny/discover/")

    assert response.status_code == 200 and response.json()["ok"] is True
    assert response.json()["counts"]["tools"] == tiny.tools.count() > 0


def test_stderr_and_counters_are_for_staff_only(hub, staff_token, tiny, alice):
    api(hub, staff_token, "POST", "/api/servers/tiny/test/")
    alice_token = create_access_token(user=alice)[1]

    staff_view = api(hub, staff_token, "GET", "/api/servers/tiny/live/")
    alice_view = api(hub, alice_token, "GET", "/api/servers/tiny/live/")
    alice_test = api(hub, alice_token, "POST", "/api/servers/tiny/test/")

    assert staff_view.status_code == 200
    assert staff_view.json()["stats"]["server"] == "tiny"
    assert alice_view.status_code == 403 and alice_test.status_code == 403
