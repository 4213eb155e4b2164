"""Staff add, test, edit and delete servers from the Servers page with the admin's rules: the
stdio permission, secrets write-only, discovery on save; others may not."""

from __future__ import annotations

import sys

import pytest
from django.contrib.auth.models import Permission

from apps.accounts.models import User
from apps.catalog.models import McpServer
from tests.live_hub import SERVERS
from tests.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)


def form_data(**fields) -> dict:
    data = {
        "name": "tiny",
        "transport": "stdio",
        "command": sys.executable,
        "args": f"-I\n-S\n{SERVERS / 'tiny.py'}",
        "visibility": "global",
        "timeout": "30",
        "enabled": "on",
        "env": "",
        "headers": "",
        "url": "",
        "cwd": "",
        "display_name": "",
        "description": "",
        "user_variables": "[]",
    }
    return {**data, **fields}


@pytest.fixture
def as_admin(client, admin_user):
    client.force_login(admin_user)
    return client


def test_staff_test_a_config_before_saving_it_and_nothing_is_saved(as_admin, pool_host):
    response = as_admin.post("/servers/new/", {**form_data(), "test": "1"})

    assert response.status_code == 200
    assert (
        "Works: tiny answered" in response.content.decode()
        and "Status is now" not in response.content.decode()
    )
    assert not McpServer.objects.exists()


def test_a_broken_config_tests_as_not_working(as_admin, pool_host):
    response = as_admin.post(
        "/servers/new/", {**form_data(command="/nonexistent/server"), "test": "1"}
    )

    assert "Does not work:" in response.content.decode()
    assert not McpServer.objects.exists()


def test_testing_a_down_server_again_and_again_tests_it_each_time(as_admin, pool_host):
    broken = {
        **form_data(args=f"-I\n-S\n{SERVERS / 'tiny.py'}\n--fail\ndatabase is down"),
        "test": "1",
    }

    for _ in range(5):  # more than the breaker's threshold (3)
        page = as_admin.post("/servers/new/", broken).content.decode()
        assert "Does not work:" in page and "database is down" in page, page
        assert "circuit open" not in page


def test_staff_add_a_server_with_a_secret_and_it_is_discovered(as_admin, pool_host):
    response = as_admin.post(
        "/servers/new/", {**form_data(env="API_KEY=s3cret-value"), "save": "1"}, follow=True
    )

    server = McpServer.objects.get(name="tiny")
    assert (
        response.redirect_chain[-1][0] == "/servers/"
        and "Server “tiny” saved" in response.content.decode()
    )
    assert server.env == {"API_KEY": "s3cret-value"}
    page = as_admin.get("/servers/tiny/edit/").content.decode()
    assert (
        "s3cret-value" not in page and "API_KEY=" in page
    )  # write-only: the name shows, never the value
    # Discovered on save: at once embedded, by the worker after commit in production.
    eventually(
        lambda: McpServer.objects.filter(name="tiny", last_checked_at__isnull=False).exists(),
        timeout=60,
    )


def test_editing_keeps_a_masked_secret_and_a_bad_edit_changes_nothing(as_admin):
    server = McpServer.objects.create(name="tiny", command="x", env={"API_KEY": "keep-me"})
    page = as_admin.get("/servers/tiny/edit/").content.decode()
    masked = page.split('name="env"')[1].split(">", 1)[1].split("</textarea>")[0].strip()

    as_admin.post("/servers/tiny/edit/", {**form_data(command="y", env=masked), "save": "1"})
    server.refresh_from_db()
    assert (server.command, server.env) == ("y", {"API_KEY": "keep-me"})

    bad = as_admin.post("/servers/tiny/edit/", {**form_data(command="", env=masked), "save": "1"})
    server.refresh_from_db()
    assert bad.status_code == 400 and "A stdio server needs a command." in bad.content.decode()
    assert server.command == "y"


def test_deleting_asks_first(as_admin):
    McpServer.objects.create(name="tiny", command="x")

    assert "Delete tiny?" in as_admin.get("/servers/tiny/delete/").content.decode()
    as_admin.post("/servers/tiny/delete/")

    assert not McpServer.objects.exists()


def test_staff_without_the_stdio_permission_cannot_define_a_stdio_server(client, db):
    manager = User.objects.create_user("erin", password="x", is_staff=True)
    manager.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="catalog",
            codename__in=["add_mcpserver", "change_mcpserver", "delete_mcpserver"],
        )
    )
    client.force_login(manager)
    McpServer.objects.create(name="local", command="x")

    refused = client.post("/servers/new/", {**form_data(), "save": "1"})

    assert refused.status_code == 400 and "manage stdio servers" in refused.content.decode()
    assert client.get("/servers/local/edit/").status_code == 403
    added = client.post(
        "/servers/new/",
        {
            **form_data(
                name="remote",
                transport="streamable_http",
                command="",
                args="",
                url="https://mcp.example.com/mcp",
            ),
            "save": "1",
        },
    )
    assert added.status_code == 302 and McpServer.objects.filter(name="remote").exists()


def test_non_staff_and_the_builtin_server_are_refused(client, alice, admin_user):
    from apps.gateway.hub_tools import ensure_hub_server

    ensure_hub_server()
    client.force_login(alice)
    assert client.get("/servers/new/").status_code == 403
    client.force_login(admin_user)
    assert client.get("/servers/hub/edit/").status_code == 403
