"""The Usage page, server side: alice sees her calls charted; charlie sees none of them; staff pick a user."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.toolsets.models import ToolCall


def log_call(user, server: str, tool: str, *, minutes_ago: int, ms: float, ok: bool = True) -> None:
    ToolCall.objects.create(
        user=user,
        endpoint=user.endpoints.get(is_default=True),
        server_name=server,
        tool_name=tool,
        exposed_name=tool,
        started_at=timezone.now() - timedelta(minutes=minutes_ago),
        duration_ms=ms,
        ok=ok,
    )


@pytest.fixture
def alice_calls(alice):
    for minutes, ms, ok in [(5, 12, True), (65, 30, False), (125, 18, True)]:
        log_call(alice, "github", "search_issues", minutes_ago=minutes, ms=ms, ok=ok)
    log_call(alice, "time", "now", minutes_ago=10, ms=2)


def _page(client, user, query: str = "") -> str:
    client.force_login(user)
    response = client.get(f"/usage/{query}")
    assert response.status_code == 200
    return response.content.decode()


def test_alice_sees_her_totals_charts_and_tables(client, alice, alice_calls):
    page = _page(client, alice)

    assert '<strong class="tile-value" id="total-calls">4</strong>' in page
    assert 'id="total-error-rate">25%' in page
    assert 'id="chart-calls"' in page and 'class="bar-error"' in page and "<polyline" in page
    assert "search_issues" in page and "?server=github&amp;tool=search_issues" in page
    assert "Last 24 hours" in page and 'aria-current="page">Usage' in page


def test_picking_a_server_narrows_everything_and_shows_a_removable_chip(client, alice, alice_calls):
    page = _page(client, alice, "?server=time&window=7d")

    assert 'id="total-calls">1</strong>' in page
    assert "search_issues" not in page
    assert 'class="chip">server <strong>time</strong> <a href="?window=7d"' in page


def test_charlie_sees_an_empty_page_not_alices_calls(client, charlie, alice_calls):
    page = _page(client, charlie)

    assert 'id="usage-empty"' in page and "search_issues" not in page
    assert 'id="usage-user"' not in page


def test_charlie_may_not_ask_for_alices_usage(client, charlie, alice_calls):
    client.force_login(charlie)

    assert client.get("/usage/?user=alice").status_code == 403


def test_staff_pick_a_user(client, admin_user, alice, charlie, alice_calls):
    log_call(charlie, "fetch", "get", minutes_ago=3, ms=40)

    everyone = _page(client, admin_user)
    only_charlie = _page(client, admin_user, "?user=charlie")

    assert 'id="total-calls">5</strong>' in everyone
    assert '<option value="alice"' in everyone and '<option value="charlie"' in everyone
    assert 'id="total-calls">1</strong>' in only_charlie and "search_issues" not in only_charlie


def test_a_bad_window_falls_back_to_the_last_day(client, alice, alice_calls):
    assert "Last 24 hours" in _page(client, alice, "?window=forever")


def test_anonymous_visitors_are_sent_to_sign_in(client, db):
    assert client.get("/usage/")["Location"].startswith("/login/")
