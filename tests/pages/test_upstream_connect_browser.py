"""In real Chromium: alice connects a backend that requires OAuth from the Tools page — Connect,
the backend's own approve page, back to the hub — then disconnects it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from apps.catalog.models import McpServer
from apps.credentials.upstream.models import UpstreamOAuthGrant
from tests.upstream_oauth.upstream import OAuthBackend

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def oauth_backend():
    backend = OAuthBackend()
    yield backend
    backend.stop()


def test_alice_connects_an_oauth_server_in_the_browser(sign_in, alice, oauth_backend):
    McpServer.objects.create(
        name="vault", transport="streamable_http", url=oauth_backend.url, oauth=True
    )
    page = sign_in("alice", "alice-password")
    page.goto("/tools/")
    row = page.locator("#connection-vault")
    expect(row).to_contain_text("not connected")

    row.get_by_role("button", name="Connect").click()
    page.wait_for_url(f"{oauth_backend.base}/approve?**")
    page.get_by_label("Who are you here?").fill("alice@vault")
    page.get_by_role("button", name="Approve").click()

    expect(page.locator(".flash-success")).to_have_text("Connected vault with your account.")
    expect(page.locator("#connection-vault")).to_contain_text("connected since")
    grant = UpstreamOAuthGrant.objects.get(user__username="alice")
    assert grant.tokens["access_token"] not in page.content()
    assert [g["subject"] for g in oauth_backend.stats()["grants"]] == ["alice@vault"]

    page.locator("#connection-vault").get_by_role("button", name="Disconnect").click()
    expect(page.locator(".flash-success")).to_contain_text("Disconnected vault")
    expect(page.locator("#connection-vault")).to_contain_text("not connected")
