"""Errors in the hub's layout, saying what happened and where to go; the API and MCP paths keep JSON."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.web import views


@pytest.fixture
def as_alice(client, alice):
    client.force_login(alice)
    return client


def test_a_missing_page_says_so_in_the_layout_with_ways_on(as_alice):
    response = as_alice.get("/no/such/page/")

    page = response.content.decode()
    assert response.status_code == 404
    assert (
        '<h1 id="error-title">Page not found</h1>' in page and "<code>/no/such/page/</code>" in page
    )
    assert (
        'class="topbar"' in page
        and 'href="/">Go to the dashboard' in page
        and ">My endpoint</a>" in page
    )


def test_someone_elses_endpoint_is_the_same_styled_404(client, charlie, alice):
    client.force_login(charlie)

    response = client.get(f"/endpoints/{alice.endpoints.get().slug}/")

    assert response.status_code == 404 and b"Page not found" in response.content


def test_a_forbidden_page_says_why(as_alice):
    response = as_alice.get("/servers/")

    page = response.content.decode()
    assert response.status_code == 403
    assert (
        "Not allowed" in page
        and "The servers page is for staff." in page
        and "Go to the dashboard" in page
    )


def test_a_visitor_who_is_not_signed_in_is_offered_sign_in(client, db):
    page = client.get("/nowhere/").content.decode()

    assert 'href="/login/">Sign in</a>' in page and "Sign out" not in page


def test_a_crash_shows_a_calm_page_without_touching_the_database_again(alice, monkeypatch):
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    monkeypatch.setattr(views, "_servers_at_a_glance", lambda user: 1 / 0)

    response = client.get("/")

    page = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong on the hub" in page and "The error is logged" in page
    assert "ZeroDivisionError" not in page


def test_an_expired_form_is_explained(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)

    response = client.post("/presets/save/", {"name": "x"})

    assert response.status_code == 403 and b"This form has expired" in response.content


@pytest.mark.parametrize("path", ["/api/no-such-thing/", "/api/presets/999999/"])
def test_the_api_keeps_json_errors(as_alice, path):
    response = as_alice.get(path)

    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert "detail" in response.json()


def test_an_unroutable_mcp_path_answers_json(client, db):
    response = client.get("/mcp")

    assert response.status_code == 404 and response.json()["error"] == "not_found"
