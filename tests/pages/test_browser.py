"""In real Chromium: alice searches, toggles and watches the budget; shares a preset bob loads; copies a snippet."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from apps.accounts.models import AccessToken, User
from apps.catalog.models import McpServer
from apps.toolsets.models import Preset

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def catalog(global_server, make_tool):
    github = McpServer.objects.create(
        name="github",
        transport="streamable_http",
        url="https://gh.example.com/mcp",
        status="healthy",
    )
    McpServer.objects.filter(pk=global_server.pk).update(
        status="down", last_error="spawn mcp-server-time ENOENT"
    )
    tools = {
        "now": make_tool(global_server, "now", 100),
        "convert": make_tool(global_server, "convert", 300),
        "zones": make_tool(global_server, "zones", 600),
    }
    for name in ("search_issues", "create_pull_request", "list_commits"):
        make_tool(github, name, 250)
    return tools


def test_alice_searches_toggles_and_watches_the_budget(sign_in, screenshot, alice, catalog):
    endpoint = alice.endpoints.get()
    endpoint.token_budget = 800
    endpoint.save()
    page = sign_in("alice", "alice-password")
    screenshot(page, "dashboard")

    page.get_by_role("link", name="Tools", exact=True).first.click()
    budget = page.locator("#budget .budget-figures")
    expect(budget).to_have_text("0 / 800 tokens (0%)")

    page.get_by_label("Search tools").fill("conv")
    expect(page.locator(".tool")).to_have_count(1)
    page.locator(f"#tool-{catalog['convert'].pk} .switch").click()
    expect(budget).to_have_text("300 / 800 tokens (38%)")

    page.get_by_label("Search tools").fill("")
    expect(page.locator(".tool")).to_have_count(6)
    page.locator(f"#tool-{catalog['zones'].pk} .switch").click()
    expect(page.locator("#flash")).to_contain_text("100 over")
    expect(page.get_by_label("Enable time.zones")).not_to_be_checked()
    expect(budget).to_have_text("300 / 800 tokens (38%)")
    screenshot(page, "tools-refused-over-budget")

    page.locator(f"#tool-{catalog['now'].pk} .switch").click()
    expect(budget).to_have_text("400 / 800 tokens (50%)")
    expect(page.locator("#count-time")).to_have_text("2 / 3 enabled")
    assert sorted(t.name for t in endpoint.tools.all()) == ["convert", "now"]
    screenshot(page, "tools")

    page.locator(f"#tool-{catalog['now'].pk}").get_by_role("button", name="Details").click()
    expect(page.locator("#dialog")).to_be_visible()
    expect(page.locator("#dialog")).to_contain_text("Input schema")
    screenshot(page, "tool-details")


def test_a_warn_only_endpoint_shows_the_over_budget_state(sign_in, screenshot, alice, catalog):
    endpoint = alice.endpoints.get()
    endpoint.token_budget, endpoint.budget_enforced = 500, False
    endpoint.save()
    page = sign_in("alice", "alice-password")
    page.goto("/tools/")

    page.locator("#group-time").get_by_role("button", name="Enable all").click()

    expect(page.locator("#budget")).to_contain_text("Over budget by 500 tokens")
    expect(page.locator("#budget")).to_have_class("budget budget-over")
    screenshot(page, "tools-over-budget")


def test_alice_shares_a_preset_and_bob_loads_it(sign_in, screenshot, alice, bob, team, catalog):
    alice.endpoints.get().tools.add(catalog["now"], catalog["convert"])
    page = sign_in("alice", "alice-password")
    page.goto("/presets/")
    page.get_by_label("Name").fill("review")
    page.get_by_label("Share with").select_option(label=team.name)
    page.get_by_role("button", name="Save preset").click()
    expect(page.locator("#flash")).to_contain_text("shared with Alice's team")
    screenshot(page, "presets")

    preset = Preset.objects.get(name="review")
    bob_page = sign_in("bob", "bob-password")
    bob_page.goto("/presets/")
    bob_page.locator(f"#preset-{preset.pk}").get_by_role("button", name="Load (replace)").click()
    expect(bob_page.locator("#flash")).to_contain_text("2 tools")
    expect(bob_page.locator("#budget .budget-figures")).to_contain_text("400 /")
    assert sorted(t.name for t in bob.endpoints.get().tools.all()) == ["convert", "now"]

    # Saving again under the same name makes v2 and lands on its diff; rolling back makes v3.
    alice.endpoints.get().tools.add(catalog["zones"])
    page.goto("/presets/")
    page.get_by_label("Name").fill("review")
    page.get_by_role("button", name="Save preset").click()
    expect(page.locator("#flash")).to_contain_text("Saved “review” v2")
    expect(page.locator(".diff-add")).to_contain_text("time.zones")
    screenshot(page, "preset-versions")
    page.get_by_role("button", name="Roll back to v1").click()
    expect(page.locator("#flash")).to_contain_text("v3 has the tools of v1")
    assert Preset.objects.filter(name="review").count() == 1
    assert preset.latest_version.tool_keys == ["time.convert", "time.now"]


def test_alice_creates_a_token_and_copies_the_claude_code_snippet(
    sign_in, screenshot, alice, catalog, live_server
):
    page = sign_in("alice", "alice-password")
    page.goto("/endpoint/")
    page.get_by_label("Token name").fill("laptop")
    page.get_by_role("button", name="Create token").click()

    token = AccessToken.objects.get(user=alice, name="laptop")
    raw = page.locator("#raw-token").inner_text()
    assert raw.startswith(f"mcphub_{token.prefix}_")
    page.locator("#snippet-claude_code ~ button").click()
    expect(page.locator("#snippet-claude_code ~ button")).to_have_text("Copied")

    copied = page.evaluate("navigator.clipboard.readText()")
    url = f"{live_server.url}{alice.endpoints.get().path}"  # the address the browser used, its port included
    assert (
        copied
        == f'claude mcp add --transport http mcphub {url} --header "Authorization: Bearer {raw}"'
    )
    screenshot(page, "endpoint")

    page.reload()  # the page after creating is a plain GET: reloading creates nothing, shows nothing again
    expect(page.locator("#raw-token")).to_have_count(0)
    assert AccessToken.objects.filter(user=alice).count() == 1


def test_staff_see_server_status_and_errors(sign_in, screenshot, admin_user, catalog):
    page = sign_in("admin", "admin-password")
    page.goto("/servers/")

    expect(page.locator("tbody tr")).to_have_count(2)
    expect(page.locator("#server-time")).to_contain_text("spawn mcp-server-time ENOENT")

    page.locator("#server-time").get_by_role("button", name="Stderr & counters").click()
    panel = page.locator("#server-time .server-panel")
    expect(panel).to_contain_text("Live state in the connection pool")
    expect(panel.locator(".panel")).to_be_focused()
    actions = page.locator("#server-time .server-actions").bounding_box()
    assert actions["height"] < 100  # the result is under the row, not stacked in the Actions column
    screenshot(page, "servers")
    panel.get_by_role("button", name="Close").click()
    expect(panel).to_have_count(0)


def test_a_refused_action_says_why(sign_in, catalog, db):
    User.objects.create_user(
        "dana", password="dana-password", is_staff=True
    )  # staff, but no server permissions
    page = sign_in("dana", "dana-password")
    page.goto("/servers/")

    page.locator("#server-time").get_by_role("button", name="Test").click()

    expect(page.locator("#flash")).to_contain_text(
        "Not allowed: You do not have permission to operate this server."
    )
