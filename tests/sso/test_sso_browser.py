"""In real Chromium: the sign-in page's provider button, the provider's page, back in the hub."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from apps.accounts.models import User
from tests.pages.conftest import (  # noqa: F401  (fixtures)
    _orm_beside_playwright,
    browser,
    screenshot,
)
from tests.sso.conftest import Idp

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def live_idp(live_server, settings):
    provider = Idp(base_urls=[live_server.url])
    settings.MCPHUB_SSO_PROVIDERS = [provider.setting()]
    settings.MCPHUB_SSO_TEAMS = ["eng=Engineering"]
    settings.MCPHUB_SSO_ONLY = True
    yield provider
    provider.stop()


def test_carol_signs_in_with_her_company_account(browser, live_server, live_idp, screenshot):
    live_idp.accounts(
        carol={
            "email": "carol@acme.test",
            "email_verified": True,
            "preferred_username": "carol",
            "groups": ["eng"],
        }
    )
    page = browser.new_context(base_url=live_server.url).new_page()
    page.set_default_timeout(15_000)
    page.goto("/login/")
    expect(page.get_by_label("Password")).to_have_count(0)  # SSO only: the providers alone
    screenshot(page, "sso-sign-in")
    page.get_by_role("button", name="Sign in with Acme ID").click()

    expect(page.get_by_role("heading", name="Test identity provider")).to_be_visible()
    page.get_by_label("Account").fill("carol")
    page.get_by_role("button", name="Continue").click()

    page.wait_for_url(f"{live_server.url}/")
    expect(page.get_by_text("carol").first).to_be_visible()
    assert User.objects.get(username="carol").memberships.get().team.name == "Engineering"

    # Signing out of the hub signs out at the provider too; the provider sends her back.
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_text("Do you want to sign-out from")).to_be_visible()
    screenshot(page, "sso-sign-out-at-provider")
    page.get_by_role("button", name="Yes, sign me out").click()
    page.wait_for_url(f"{live_server.url}/login/**")
    page.get_by_role("button", name="Sign in with Acme ID").click()
    expect(page.get_by_label("Account")).to_be_visible()  # the provider asks who she is again
