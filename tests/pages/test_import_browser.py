"""In real Chromium: an admin pastes a `.mcp.json`, reads the dry-run preview, fixes an error, applies."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from apps.catalog.models import McpServer

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_admin_previews_fixes_and_applies_an_import(
    global_server, sign_in, screenshot, admin_user
):
    # Imported servers are discovered after commit: these fail at once (no such command, port 9 closed).
    config = {
        "mcpServers": {
            "time": {"command": "mcp-server-time"},
            "memory": {"command": "/nonexistent/server-memory", "args": ["--stdio"]},
            "github": {"type": "http", "url": "ftp://127.0.0.1:9/mcp"},
        }
    }
    page = sign_in("admin", "admin-password")
    page.goto("/servers/")
    page.get_by_role("link", name="Import / export .mcp.json").click()

    page.get_by_label("Paste a config").fill(json.dumps(config, indent=2))
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_role("alert")).to_contain_text(
        "mcpServers.github.url: must be an http:// or https:// URL"
    )
    expect(page.get_by_role("button", name="Apply")).to_have_count(0)

    config["mcpServers"]["github"]["url"] = "http://127.0.0.1:9/mcp"
    page.get_by_label("Paste a config").fill(json.dumps(config, indent=2))
    page.get_by_role("button", name="Preview").click()
    expect(page.locator(".import-preview h3")).to_have_text(
        "Preview: 2 to create, 0 to change, 1 unchanged"
    )
    screenshot(page, "import-preview")
    assert McpServer.objects.count() == 1

    page.get_by_role("button", name="Apply: 2 new, 0 changed").click()
    expect(page.locator("#flash")).to_contain_text(
        "Imported 3 server(s): 2 created, 0 changed, 1 unchanged."
    )
    expect(page.locator("#server-memory")).to_be_visible()
    assert sorted(McpServer.objects.values_list("name", flat=True)) == ["github", "memory", "time"]


def test_a_paste_too_large_to_send_is_refused_in_place_and_kept(sign_in, admin_user):
    page = sign_in("admin", "admin-password")
    page.goto("/servers/import/")
    huge = json.dumps(
        {"mcpServers": {"time": {"command": "mcp-server-time", "args": ["x" * 3_000_000]}}}
    )
    field = page.get_by_label("Paste a config")
    field.fill(huge)

    page.get_by_role("button", name="Preview").click()

    expect(page.locator("#id_text-size-error")).to_contain_text(
        "This is 3.0 MB; at most 1.0 MB can be sent."
    )
    assert page.url.endswith("/servers/import/")
    assert len(field.input_value()) == len(huge)  # the paste is still there
    assert not McpServer.objects.exists()
