"""Staff import `.mcp.json` from the Servers page: a dry-run preview naming every change and error, then apply."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.accounts.models import User
from apps.catalog.models import McpServer

CONFIG = json.dumps(
    {
        "mcpServers": {
            "time": {"command": "mcp-server-time"},
            "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
            "github": {
                "type": "http",
                "url": "https://gh.example.com/mcp",
                "headers": {"Authorization": "Bearer ${GH:-abc}"},
            },
        }
    }
)


@pytest.fixture
def as_admin(client, admin_user):
    client.force_login(admin_user)
    return client


@pytest.fixture
def server_manager(db) -> User:
    """Staff, but no superuser: holds exactly the permissions the import needs."""
    user = User.objects.create_user("dana", password="dana-password", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="catalog", codename__in=["add_mcpserver", "change_mcpserver"]
        )
    )
    return user


def _preview(client, text=CONFIG):
    return client.post("/servers/import/", {"text": text, "preview": "1"})


def test_the_preview_says_what_would_be_created_changed_and_skipped_and_writes_nothing(
    as_admin, global_server
):
    McpServer.objects.create(name="memory", command="old-memory")

    response = _preview(as_admin)

    page = response.content.decode()
    assert response.status_code == 200
    assert "Preview: 1 to create, 1 to change, 1 unchanged" in page
    assert (
        '<tr class="change-created">\n        <td data-label="Server"><strong>github</strong>'
        in page
    )
    assert 'will change</span> <span class="muted">command, args</span>' in page
    assert "unchanged (skipped)" in page
    assert "Apply: 1 new, 1 changed" in page
    assert sorted(McpServer.objects.values_list("command", flat=True)) == [
        "mcp-server-time",
        "old-memory",
    ]


def test_applying_the_preview_imports_it_all(as_admin):
    digest = _preview(as_admin).context["digest"]

    response = as_admin.post(
        "/servers/import/", {"text": CONFIG, "previewed": digest, "apply": "1"}, follow=True
    )

    assert response.redirect_chain[-1][0] == "/servers/"
    assert "Imported 3 server(s): 3 created, 0 changed, 0 unchanged." in response.content.decode()
    assert McpServer.objects.get(name="github").headers == {"Authorization": "Bearer abc"}


def test_a_config_edited_after_its_preview_is_previewed_again_not_applied(as_admin):
    digest = _preview(as_admin).context["digest"]
    edited = CONFIG.replace("mcp-server-time", "something-else")

    response = as_admin.post(
        "/servers/import/", {"text": edited, "previewed": digest, "apply": "1"}
    )

    assert "The config changed after its preview" in response.content.decode()
    assert not McpServer.objects.exists()


def test_every_error_is_named_and_nothing_is_written(as_admin, alice):
    McpServer.objects.create(name="time", command="x", visibility="private", owner=alice)
    bad = json.dumps(
        {
            "mcpServers": {
                "time": {"command": "mcp-server-time"},
                "broken": {"command": 42},
                "remote": {"type": "http", "url": "ftp://nowhere"},
                "fine": {"command": "ok"},
            }
        }
    )

    response = _preview(as_admin, bad)

    page = response.content.decode()
    assert response.status_code == 400
    assert "Nothing can be imported: 3 problems" in page
    assert "mcpServers.broken.command: must be a string" in page
    assert "mcpServers.remote.url: must be an http:// or https:// URL" in page
    assert "mcpServers.time: server &#x27;time&#x27; already exists and is private to alice" in page
    assert "Apply:" not in page
    assert McpServer.objects.count() == 1


def test_a_conflict_with_another_scope_is_named_too(as_admin, alice):
    McpServer.objects.create(name="time", command="x", visibility="private", owner=alice)

    page = _preview(as_admin).content.decode()

    assert "mcpServers.time: server &#x27;time&#x27; already exists and is private to alice" in page


def test_placeholders_never_read_the_hubs_environment(as_admin, monkeypatch):
    monkeypatch.setenv("HUB_SECRET", "do-not-leak")
    text = json.dumps({"mcpServers": {"leak": {"command": "echo", "env": {"X": "${HUB_SECRET}"}}}})

    page = _preview(as_admin, text).content.decode()

    assert "environment variable HUB_SECRET is not set" in page and "do-not-leak" not in page


def test_an_uploaded_file_is_previewed(as_admin):
    upload = SimpleUploadedFile(".mcp.json", CONFIG.encode(), content_type="application/json")

    response = as_admin.post("/servers/import/", {"file": upload, "preview": "1"})

    assert "Preview: 3 to create" in response.content.decode()


@pytest.mark.parametrize(
    "text,message",
    [
        ("", "Paste a config or choose a file."),
        ("{not json", "not valid JSON: Expecting property name"),
    ],
)
def test_nothing_to_read_says_why(as_admin, text, message):
    assert message in _preview(as_admin, text).content.decode()


def test_a_server_manager_who_is_not_superuser_may_import(client, server_manager):
    client.force_login(server_manager)

    assert client.get("/servers/import/").status_code == 200


@pytest.mark.parametrize("persona", ["alice", "charlie"])
def test_people_who_are_not_server_staff_may_not_import_or_export(client, persona, request):
    client.force_login(request.getfixturevalue(persona))

    assert client.get("/servers/import/").status_code == 403
    assert client.post("/servers/import/", {"text": CONFIG, "preview": "1"}).status_code == 403
    assert client.get("/servers/export/").status_code == 403
    assert not McpServer.objects.exists()


def test_staff_without_the_server_permissions_may_not_import(client, db):
    clerk = User.objects.create_user("clerk", password="x", is_staff=True)
    client.force_login(clerk)

    response = client.get("/servers/import/")

    assert (
        response.status_code == 403
        and b"Importing servers is for staff allowed to manage servers." in response.content
    )


def test_the_export_masks_secrets(as_admin, alice_private_server):
    McpServer.objects.create(name="gh", command="gh-mcp", env={"GITHUB_TOKEN": "ghp_secret"})

    response = as_admin.get("/servers/export/")

    body = response.content.decode()
    assert response["Content-Disposition"] == 'attachment; filename=".mcp.json"'
    assert json.loads(body)["mcpServers"]["gh"]["env"] == {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}
    assert "ghp_secret" not in body and "alice-secret-header" not in body
    page = as_admin.get("/servers/import/").content.decode()
    assert (
        "ghp_secret" not in page
        and "set GITHUB_TOKEN, MCP_ALICE_NOTES_AUTHORIZATION before using it" in page
    )


def test_the_vscode_export_uses_servers(as_admin, global_server):
    assert "servers" in json.loads(as_admin.get("/servers/export/?format=vscode").content)


def test_stdio_servers_need_the_stdio_permission(client, server_manager, global_server):
    client.force_login(server_manager)
    text = json.dumps(
        {
            "mcpServers": {
                "time": {"command": "mcp-server-time"},  # unchanged: nothing runs differently
                "shell": {"command": "sh", "args": ["-c", "id"]},
                "github": {"type": "http", "url": "https://gh.example.com/mcp"},
                "broken": {"type": "http", "url": 5},
            }
        }
    )

    page = client.post("/servers/import/", {"text": text, "preview": "1"}).content.decode()

    assert (
        "Nothing can be imported: 2 problems" in page
        and "mcpServers.broken.url: must be a string" in page
    )
    assert (
        "mcpServers.shell: creating or changing a stdio server needs the &#x27;manage stdio servers&#x27; permission"
        in page
    )
    assert McpServer.objects.count() == 1


def test_turning_a_stdio_server_remote_needs_the_stdio_permission_too(
    client, server_manager, global_server
):
    client.force_login(server_manager)
    text = json.dumps(
        {"mcpServers": {"time": {"type": "http", "url": "https://time.example.com/mcp"}}}
    )

    page = client.post("/servers/import/", {"text": text, "preview": "1"}).content.decode()

    assert "mcpServers.time: creating or changing a stdio server" in page


def test_with_the_stdio_permission_stdio_servers_import(client, server_manager):
    server_manager.user_permissions.add(Permission.objects.get(codename="manage_stdio_server"))
    client.force_login(User.objects.get(pk=server_manager.pk))

    page = client.post("/servers/import/", {"text": CONFIG, "preview": "1"}).content.decode()

    assert "Preview: 3 to create" in page


def test_servers_can_be_imported_for_one_team_or_only_oneself(client, alice, team):
    alice.is_staff, alice.is_superuser = True, True
    alice.save()
    client.force_login(alice)
    mine = json.dumps(
        {"mcpServers": {"notes": {"type": "http", "url": "https://notes.example.com/mcp"}}}
    )
    theirs = json.dumps(
        {"mcpServers": {"wiki": {"type": "http", "url": "https://wiki.example.com/mcp"}}}
    )

    for text, audience in [(mine, "me"), (theirs, f"team:{team.slug}")]:
        digest = client.post(
            "/servers/import/", {"text": text, "audience": audience, "preview": "1"}
        ).context["digest"]
        client.post(
            "/servers/import/",
            {"text": text, "audience": audience, "previewed": digest, "apply": "1"},
        )

    notes, wiki = McpServer.objects.get(name="notes"), McpServer.objects.get(name="wiki")
    assert (notes.visibility, notes.owner, notes.team) == ("private", alice, None)
    assert (wiki.visibility, wiki.owner, wiki.team) == ("team", None, team)


def test_changing_who_sees_them_after_the_preview_needs_a_new_preview(as_admin):
    digest = _preview(as_admin).context["digest"]

    response = as_admin.post(
        "/servers/import/", {"text": CONFIG, "audience": "me", "previewed": digest, "apply": "1"}
    )

    assert "The config changed after its preview" in response.content.decode()
    assert not McpServer.objects.exists()


def test_a_team_one_is_not_on_is_refused(as_admin, team):
    response = as_admin.post(
        "/servers/import/", {"text": CONFIG, "audience": f"team:{team.slug}", "preview": "1"}
    )

    assert "is not one of the available choices" in response.content.decode()
    assert not McpServer.objects.exists()


def test_the_export_shows_only_to_those_who_may_see_every_server(
    client, server_manager, alice_private_server
):
    client.force_login(server_manager)

    page = client.get("/servers/import/").content.decode()

    assert 'id="export"' not in page and "alice-notes" not in page


def test_the_servers_page_offers_import_only_to_those_who_may(client, admin_user, db):
    clerk = User.objects.create_user("clerk", password="x", is_staff=True)

    client.force_login(admin_user)
    assert b"Import / export .mcp.json" in client.get("/servers/").content
    client.force_login(clerk)
    assert b"Import / export .mcp.json" not in client.get("/servers/").content


def test_a_post_too_large_to_read_gets_a_clear_error_not_a_bad_request_page(as_admin, caplog):
    response = _preview(as_admin, text="x" * 3_000_000)

    assert response.status_code == 413
    page = response.content.decode()
    assert "Too large to read" in page and "at most 2.6 MB of a form or request body" in page
    assert not McpServer.objects.exists()
    logged = [r for r in caplog.records if r.name == "django.security.RequestDataTooBig"]
    assert logged and all(
        r.exc_info is None and r.exc_text is None for r in logged
    )  # one line, no traceback


def test_a_preview_with_nothing_to_change_offers_no_apply_button(as_admin):
    McpServer.objects.create(name="time", command="mcp-server-time")

    page = _preview(
        as_admin, text=json.dumps({"mcpServers": {"time": {"command": "mcp-server-time"}}})
    ).content.decode()

    assert "Preview: 0 to create, 0 to change, 1 unchanged" in page
    assert 'name="apply"' not in page and "Nothing to apply" in page
