"""Server secrets are write-only in the admin: masked on the page, kept, replaced or removed on save."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.catalog.forms import MASK
from apps.catalog.models import McpServer
from tests.admin.browser import form_data, submit

GITHUB_TOKEN = "ghp_alice-very-secret-0123456789"
HEADER_SECRET = "Bearer header-secret-abcdef"


@pytest.fixture
def github_server(db) -> McpServer:
    return McpServer.objects.create(
        name="github",
        transport="stdio",
        command="npx",
        args=["-y", "@modelcontextprotocol/server-github"],
        env={"GITHUB_TOKEN": GITHUB_TOKEN, "LOG_LEVEL": "debug"},
        headers={"Authorization": HEADER_SECRET},
    )


@pytest.fixture
def change_url(github_server) -> str:
    return reverse("admin:catalog_mcpserver_change", args=[github_server.pk])


@pytest.fixture
def logged_in(client, admin_user):
    client.force_login(admin_user)
    return client


def test_change_page_shows_key_names_but_never_a_secret(logged_in, change_url):
    html = logged_in.get(change_url).content.decode()

    assert f"GITHUB_TOKEN={MASK}" in html
    assert f"Authorization={MASK}" in html
    assert GITHUB_TOKEN not in html
    assert "header-secret" not in html
    assert "debug" not in form_data(html)["env"]


def test_saving_the_masked_values_keeps_every_secret(logged_in, change_url, github_server):
    response = submit(logged_in, change_url, {"description": "GitHub, for everyone"})

    assert response.status_code == 302
    github_server.refresh_from_db()
    assert github_server.description == "GitHub, for everyone"
    assert github_server.enabled
    assert github_server.env == {"GITHUB_TOKEN": GITHUB_TOKEN, "LOG_LEVEL": "debug"}
    assert github_server.headers == {"Authorization": HEADER_SECRET}


def test_a_new_value_replaces_the_secret_and_a_new_key_is_added(
    logged_in, change_url, github_server
):
    env = f"GITHUB_TOKEN=ghp_rotated\nLOG_LEVEL={MASK}\nGITHUB_HOST=github.example.com"

    assert submit(logged_in, change_url, {"env": env}).status_code == 302

    github_server.refresh_from_db()
    assert github_server.env == {
        "GITHUB_TOKEN": "ghp_rotated",
        "LOG_LEVEL": "debug",
        "GITHUB_HOST": "github.example.com",
    }


def test_removing_the_line_removes_the_key(logged_in, change_url, github_server):
    assert (
        submit(logged_in, change_url, {"env": f"GITHUB_TOKEN={MASK}", "headers": ""}).status_code
        == 302
    )

    github_server.refresh_from_db()
    assert github_server.env == {"GITHUB_TOKEN": GITHUB_TOKEN}
    assert github_server.headers == {}


def test_a_rejected_save_echoes_no_value_and_changes_nothing(logged_in, change_url, github_server):
    response = submit(
        logged_in,
        change_url,
        {"env": "GITHUB_TOKEN=ghp_typed-by-admin\nnot a line", "name": "Bad Name"},
    )

    assert response.status_code == 200
    html = response.content.decode()
    assert "Line 2: write it as NAME=value." in html
    assert "ghp_typed-by-admin" not in html and GITHUB_TOKEN not in html
    github_server.refresh_from_db()
    assert github_server.name == "github"
    assert github_server.env["GITHUB_TOKEN"] == GITHUB_TOKEN


def test_the_mask_on_a_key_with_no_stored_value_is_an_error(logged_in, change_url, github_server):
    response = submit(logged_in, change_url, {"env": f"GITHUB_TOKEN={MASK}\nNEW_KEY={MASK}"})

    assert response.status_code == 200
    assert "NEW_KEY has no stored value to keep" in response.content.decode()
    github_server.refresh_from_db()
    assert "NEW_KEY" not in github_server.env


def test_a_new_server_gets_its_secrets_and_args(logged_in):
    response = logged_in.post(
        reverse("admin:catalog_mcpserver_add"),
        {
            "name": "brave",
            "transport": "stdio",
            "command": "npx",
            "args": "-y\n@brave/brave-search-mcp-server",
            "env": "BRAVE_API_KEY=brave-secret",
            "headers": "",
            "timeout": "30",
            "visibility": "global",
            "enabled": "on",
        },
    )

    assert response.status_code == 302, response.context["adminform"].form.errors
    server = McpServer.objects.get(name="brave")
    assert server.args == ["-y", "@brave/brave-search-mcp-server"]
    assert server.env == {"BRAVE_API_KEY": "brave-secret"}
    assert (
        "brave-secret"
        not in logged_in.get(
            reverse("admin:catalog_mcpserver_change", args=[server.pk])
        ).content.decode()
    )


def test_error_reports_would_hide_the_typed_secrets(logged_in, change_url):
    response = submit(logged_in, change_url, {"env": "GITHUB_TOKEN=ghp_new"})

    assert response.wsgi_request.sensitive_post_parameters == ("env", "headers")
