"""In real Chromium: alice finds a shared server's tools marked "needs your credentials", fills her
own values, sees them set (never shown), and removes them again."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from apps.catalog.models import McpServer
from apps.credentials.models import UserCredential

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "ghp_alice-browser-secret"


@pytest.fixture
def github(make_tool) -> McpServer:
    server = McpServer.objects.create(
        name="github",
        transport=McpServer.Transport.STREAMABLE_HTTP,
        url="https://github.example.com/mcp?org=${user:ORG}",
        headers={"Authorization": "Bearer ${user:GITHUB_TOKEN}"},
        user_variables=[
            {
                "name": "GITHUB_TOKEN",
                "label": "GitHub token",
                "help_text": "A fine-grained token with repo read access.",
            },
            {"name": "ORG", "label": "Organisation", "required": False},
        ],
    )
    make_tool(server, "search_issues")
    return server


def test_alice_fills_her_credentials_for_a_shared_server(sign_in, screenshot, alice, github):
    page = sign_in("alice", "alice-password")

    page.goto("/tools/")
    badge = page.locator("#group-github").get_by_role("link", name="needs your credentials")
    expect(badge).to_be_visible()
    screenshot(page, "credentials-needed")
    badge.click()

    expect(page.get_by_role("heading", level=1)).to_have_text("Your credentials for github")
    expect(page.locator("#var-GITHUB_TOKEN")).to_contain_text("needed")
    expect(page.get_by_text("A fine-grained token with repo read access.")).to_be_visible()
    page.get_by_label("GitHub token").fill(SECRET)
    page.get_by_role("button", name="Save").click()

    expect(page.locator("#flash")).to_contain_text("Saved your credentials for github.")
    expect(page.locator("#var-GITHUB_TOKEN")).to_contain_text("set")
    expect(page.locator("#var-ORG")).to_contain_text("optional, not set")
    expect(page.get_by_label("GitHub token")).to_have_value("")
    assert SECRET not in page.content()
    assert UserCredential.objects.get(user=alice, server=github).values == {"GITHUB_TOKEN": SECRET}
    screenshot(page, "credentials-saved")

    page.goto("/tools/")
    expect(
        page.locator("#group-github").get_by_role("link", name="your credentials")
    ).to_be_visible()
    expect(page.locator("#group-github").get_by_text("needs your credentials")).to_have_count(0)

    page.goto("/servers/github/credentials/")
    page.get_by_role("button", name="Remove my values").click()
    expect(page.locator("#flash")).to_contain_text("removed")
    expect(page.locator("#var-GITHUB_TOKEN")).to_contain_text("needed")
    assert not UserCredential.objects.filter(user=alice).exists()
