"""In real Chromium: alice asks the Tools page which tools fit a task, reads why, and adds them."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from apps.catalog.models import McpServer, Tool
from tests.pages.conftest import _orm_beside_playwright, browser, screenshot, sign_in  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def catalog(db):
    github = McpServer.objects.create(
        name="github",
        transport="streamable_http",
        url="https://gh.example.com/mcp",
        status="healthy",
    )
    for name, description in (
        ("search_issues", "Search issues and pull requests in a repository."),
        ("create_pull_request", "Open a pull request from a branch."),
        ("list_commits", "List the commits of a branch."),
    ):
        Tool.objects.create(
            server=github,
            name=name,
            description=description,
            input_schema={"type": "object"},
            token_estimate=250,
        )


def test_alice_gets_suggestions_with_reasons_and_adds_them(sign_in, screenshot, alice, catalog):
    page = sign_in("alice", "alice-password")
    page.goto("/tools/")

    page.get_by_text("Which tools for this task?").click()
    page.get_by_label("Task").fill("find open issues in my repository")
    page.get_by_label("Budget for these tools (tokens)").fill("300")
    page.get_by_role("button", name="Suggest").click()
    expect(page.locator(".suggestions li")).to_have_count(1)
    expect(page.locator(".suggestions")).to_contain_text("search_issues")
    expect(page.locator(".suggestions .reason")).to_contain_text("matches: issues, repository")
    screenshot(page, "tools-suggestions")
    page.get_by_role("button", name="Add to enabled tools").click()

    expect(page.locator("#budget .budget-figures")).to_contain_text("250 /")
    assert list(alice.endpoints.get().tools.values_list("name", flat=True)) == ["search_issues"]
