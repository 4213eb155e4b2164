"""Servers: everyone lists what they may see; staff define them; secrets never come back out."""

from __future__ import annotations

import pytest

from apps.catalog.models import McpServer

REMOTE = {
    "name": "search",
    "transport": "streamable_http",
    "url": "https://search.example.com/mcp",
    "headers": {"Authorization": "Bearer s3cret-header"},
}


def test_each_persona_lists_the_servers_they_may_see(
    as_alice, as_charlie, alice_private_server, global_server
):
    assert [s["name"] for s in as_alice.get("/api/servers/").json()["results"]] == [
        "alice-notes",
        "time",
    ]
    assert [s["name"] for s in as_charlie.get("/api/servers/").json()["results"]] == ["time"]
    assert as_charlie.get("/api/servers/alice-notes/").status_code == 404


def test_secrets_are_never_returned_only_their_names(as_alice, alice_private_server):
    response = as_alice.get("/api/servers/alice-notes/")

    assert response.json()["header_keys"] == ["Authorization"]
    assert "headers" not in response.json()
    assert "alice-secret-header" not in response.content.decode()


def test_a_server_row_shows_status_and_tool_count(as_alice, global_server, time_tools):
    body = as_alice.get("/api/servers/time/").json()

    assert (body["status"], body["tool_count"], body["last_error"]) == ("unknown", 3, "")


def test_staff_create_a_stdio_server_with_a_secret_env(as_admin):
    response = as_admin.post(
        "/api/servers/",
        {
            "name": "gh",
            "transport": "stdio",
            "command": "npx",
            "args": ["-y", "gh-mcp"],
            "env": {"GH_TOKEN": "ghp_x"},
        },
        format="json",
    )

    assert response.status_code == 201, response.json()
    assert response.json()["env_keys"] == ["GH_TOKEN"]
    assert "ghp_x" not in response.content.decode()
    assert McpServer.objects.get(name="gh").env == {"GH_TOKEN": "ghp_x"}


def test_staff_update_without_secrets_keeps_them(as_admin, alice_private_server):
    response = as_admin.patch("/api/servers/alice-notes/", {"description": "notes"}, format="json")

    assert response.status_code == 200
    alice_private_server.refresh_from_db()
    assert alice_private_server.headers == {"Authorization": "Bearer alice-secret-header"}


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"name": "x", "transport": "stdio"}, "command"),
        ({"name": "x", "transport": "sse"}, "url"),
        ({"name": "Bad Name", "command": "x"}, "name"),
        ({"name": "x", "command": "x", "visibility": "team"}, "team"),
        ({"name": "x", "command": "x", "timeout": 0}, "timeout"),
        ({"name": "time", "command": "x"}, "name"),
    ],
)
def test_bad_server_input_gets_a_field_error(as_admin, global_server, payload, field):
    response = as_admin.post("/api/servers/", payload, format="json")

    assert response.status_code == 400
    assert field in response.json()


@pytest.mark.parametrize("persona", ["as_alice", "as_bob", "as_charlie"])
def test_non_staff_may_not_create_change_or_delete_servers(request, persona, global_server, team):
    client = request.getfixturevalue(persona)

    assert client.post("/api/servers/", REMOTE, format="json").status_code == 403
    assert (
        client.patch("/api/servers/time/", {"description": "mine"}, format="json").status_code
        == 403
    )
    assert client.delete("/api/servers/time/").status_code == 403
    assert McpServer.objects.get(name="time").description == ""


def test_anonymous_sees_no_servers(anonymous, global_server):
    assert anonymous.get("/api/servers/").status_code == 401


def test_staff_delete_a_server(as_admin, global_server):
    assert as_admin.delete("/api/servers/time/").status_code == 204
    assert not McpServer.objects.filter(name="time").exists()


def test_when_allowed_users_add_remote_servers_private_to_themselves(
    as_alice, as_charlie, settings, alice
):
    settings.MCPHUB_USERS_MAY_ADD_SERVERS = True

    response = as_alice.post("/api/servers/", {**REMOTE, "visibility": "global"}, format="json")

    assert response.status_code == 201, response.json()
    assert (response.json()["visibility"], response.json()["owner"]) == ("private", "alice")
    assert as_charlie.get("/api/servers/search/").status_code == 404
    assert as_charlie.delete("/api/servers/search/").status_code == 404


def test_stdio_servers_stay_staff_only_even_when_users_may_add_servers(as_alice, settings):
    settings.MCPHUB_USERS_MAY_ADD_SERVERS = True

    response = as_alice.post(
        "/api/servers/", {"name": "evil", "transport": "stdio", "command": "rm"}, format="json"
    )

    assert response.status_code == 403
    assert not McpServer.objects.filter(name="evil").exists()


def test_servers_filter_by_transport_and_search(as_admin, global_server, alice_private_server):
    assert [s["name"] for s in as_admin.get("/api/servers/?transport=stdio").json()["results"]] == [
        "time"
    ]
    assert [s["name"] for s in as_admin.get("/api/servers/?search=notes").json()["results"]] == [
        "alice-notes"
    ]
