"""Invalid servers get form errors on the page and leave the stored server as it was."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.catalog.models import McpServer
from tests.admin.browser import submit


@pytest.fixture
def logged_in(client, admin_user):
    client.force_login(admin_user)
    return client


def errors_of(response) -> dict:
    return response.context["adminform"].form.errors


def test_a_stdio_server_without_a_command_is_refused(logged_in, global_server):
    url = reverse("admin:catalog_mcpserver_change", args=[global_server.pk])

    response = submit(logged_in, url, {"command": "", "description": "changed"})

    assert response.status_code == 200
    assert errors_of(response)["command"] == ["A stdio server needs a command."]
    global_server.refresh_from_db()
    assert global_server.command == "mcp-server-time"
    assert global_server.description == ""


def test_adding_a_stdio_server_without_a_command_creates_nothing(logged_in):
    response = logged_in.post(
        reverse("admin:catalog_mcpserver_add"),
        {"name": "broken", "transport": "stdio", "timeout": "30", "visibility": "global"},
    )

    assert response.status_code == 200
    assert "A stdio server needs a command." in response.content.decode()
    assert not McpServer.objects.filter(name="broken").exists()


def test_a_team_server_without_a_team_is_refused(logged_in, global_server):
    url = reverse("admin:catalog_mcpserver_change", args=[global_server.pk])

    response = submit(logged_in, url, {"visibility": "team"})

    assert errors_of(response)["team"] == ["Choose the team that may see this server."]
    global_server.refresh_from_db()
    assert global_server.visibility == McpServer.Visibility.GLOBAL


@pytest.mark.parametrize(
    ("args", "message"),
    [('["-y", 3]', "The JSON list must hold only strings."), ('["-y"', "Not a valid JSON list")],
)
def test_bad_json_arguments_are_refused(logged_in, global_server, args, message):
    url = reverse("admin:catalog_mcpserver_change", args=[global_server.pk])

    response = submit(logged_in, url, {"args": args})

    assert message in errors_of(response)["args"][0]


def test_arguments_that_lines_cannot_hold_round_trip_as_json(logged_in, global_server):
    global_server.args = ["--label", " padded ", ""]
    global_server.save()
    url = reverse("admin:catalog_mcpserver_change", args=[global_server.pk])

    assert submit(logged_in, url).status_code == 302

    global_server.refresh_from_db()
    assert global_server.args == ["--label", " padded ", ""]
