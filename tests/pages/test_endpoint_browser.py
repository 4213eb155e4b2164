"""In real Chromium: alice adds an endpoint from the dashboard, makes it dynamic, then deletes it after confirming."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.django_db(transaction=True)


def test_alice_creates_configures_and_deletes_an_endpoint(sign_in, screenshot, alice):
    page = sign_in("alice", "alice-password")

    page.get_by_role("link", name="+ New endpoint").click()
    page.get_by_label("Name", exact=True).fill("Cursor")
    page.get_by_label("Tool names").select_option("prefixed")
    page.get_by_label("Token budget").fill("6000")
    screenshot(page, "endpoint-new")
    page.get_by_role("button", name="Create endpoint").click()
    expect(page.locator("#flash")).to_contain_text("Endpoint “Cursor” created")
    endpoint = alice.endpoints.get(name="Cursor")
    assert (endpoint.naming_strategy, endpoint.token_budget) == ("prefixed", 6000)

    page.get_by_label("Mode", exact=True).select_option("dynamic")
    page.get_by_label("Name", exact=True).fill("Cursor (dynamic)")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator("#flash")).to_contain_text("Endpoint settings saved.")
    expect(page.get_by_role("heading", level=1)).to_have_text("Cursor (dynamic)")
    expect(page.get_by_label("Mode", exact=True)).to_have_value("dynamic")
    page.locator("#settings").scroll_into_view_if_needed()
    screenshot(page, "endpoint-settings")

    page.get_by_role("link", name="Delete endpoint…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Delete “Cursor (dynamic)”?")
    screenshot(page, "endpoint-delete")
    page.get_by_role("button", name="Delete endpoint").click()
    expect(page.locator("#flash")).to_contain_text("deleted")
    expect(page.locator(".cards .card")).to_have_count(1)
    assert not alice.endpoints.filter(name__startswith="Cursor").exists()

    page.goto("/endpoint/")
    expect(page.locator("#delete")).to_contain_text("cannot be deleted")
