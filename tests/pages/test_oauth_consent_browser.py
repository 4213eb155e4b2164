"""In real Chromium: a hosted client sends alice to the hub's consent page; she reads who asks for
what, allows it, and later revokes it from her endpoint page."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.test import Client
from playwright.sync_api import expect

from apps.oauth.models import ConnectedApp
from tests.oauth.oauth_client import CALLBACK, challenge_of, query_of, register

pytestmark = pytest.mark.django_db(transaction=True)


def test_alice_approves_a_client_and_later_revokes_it(sign_in, screenshot, live_server, alice):
    status, registered = register(Client(), client_name="Claude-ish Connector")
    assert status == 201
    endpoint = alice.endpoints.get()
    page = sign_in("alice", "alice-password")
    redirects: list[str] = []
    page.route(
        f"{CALLBACK}**",
        lambda route: (redirects.append(route.request.url), route.fulfill(body="back in the app")),
    )
    params = {
        "response_type": "code",
        "client_id": registered["client_id"],
        "redirect_uri": CALLBACK,
        "state": "xyz",
        "code_challenge": challenge_of("v" * 64),
        "code_challenge_method": "S256",
        "scope": "mcp",
        "resource": f"{live_server.url}{endpoint.path}",
    }

    page.goto(f"/oauth/authorize/?{urlencode(params)}")

    expect(page.get_by_role("heading", level=1)).to_have_text("Connect Claude-ish Connector?")
    expect(page.locator("#consent-endpoint")).to_have_text(endpoint.name)
    expect(page.locator("#unverified")).to_contain_text("127.0.0.1:43210")
    expect(page.locator("#consent-scopes")).to_contain_text(
        "Use the tools enabled on this endpoint"
    )
    screenshot(page, "oauth-consent")
    page.get_by_role("button", name="Allow").click()
    expect(page.locator("body")).to_have_text("back in the app")
    answer = query_of(redirects[-1])
    assert answer["state"] == "xyz" and answer["code"] and answer["iss"] == live_server.url
    assert (
        ConnectedApp.objects.filter(endpoint=endpoint).count() == 0
    )  # a code alone is no connection yet

    Client().post(
        "/oauth/token/",
        {
            "grant_type": "authorization_code",
            "code": answer["code"],
            "redirect_uri": CALLBACK,
            "client_id": registered["client_id"],
            "code_verifier": "v" * 64,
        },
        HTTP_HOST=live_server.url.split("//")[1],
    )
    page.goto(f"/endpoints/{endpoint.slug}/")
    row = page.locator("#connected-apps tbody tr")
    expect(row).to_contain_text("Claude-ish Connector")
    screenshot(page, "oauth-connected-apps")
    row.get_by_role("button", name="Revoke").click()
    expect(page.locator("#flash")).to_contain_text(
        "Claude-ish Connector can no longer use this endpoint."
    )
    expect(page.locator("#no-connected-apps")).to_be_visible()
    assert not ConnectedApp.objects.exists()


def test_alice_denies_and_the_client_hears_access_denied(sign_in, live_server, alice):
    _, registered = register(Client(), client_name="Unwanted")
    page = sign_in("alice", "alice-password")
    redirects: list[str] = []
    page.route(
        f"{CALLBACK}**",
        lambda route: (redirects.append(route.request.url), route.fulfill(body="back")),
    )
    params = {
        "response_type": "code",
        "client_id": registered["client_id"],
        "redirect_uri": CALLBACK,
        "state": "s",
        "code_challenge": challenge_of("v" * 64),
        "code_challenge_method": "S256",
        "resource": f"{live_server.url}{alice.endpoints.get().path}",
    }

    page.goto(f"/oauth/authorize/?{urlencode(params)}")
    page.get_by_role("button", name="Deny").click()

    expect(page.locator("body")).to_have_text("back")
    assert query_of(redirects[-1])["error"] == "access_denied"
    assert not ConnectedApp.objects.exists()
