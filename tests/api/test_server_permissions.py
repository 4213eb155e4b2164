"""Server writes follow Django's model permissions, by API, page and admin alike; stdio needs its own.

dave is staff with no model permissions: the admin refuses him every model page, and so must the
API and the pages. A superuser holds every permission, including `catalog.manage_stdio_server`.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from apps.accounts.services import create_access_token
from apps.catalog.models import McpServer

STDIO = {"name": "shell", "transport": "stdio", "command": "/bin/sh", "args": ["-c", "id"]}
REMOTE = {"name": "remote", "transport": "streamable_http", "url": "https://mcp.example.com/mcp"}


def api_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {create_access_token(user=user)[1]}")
    return client


def grant(user, *codenames: str) -> None:
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="catalog", codename__in=codenames)
    )


@pytest.fixture
def as_dave(dave) -> APIClient:
    return api_client(dave)


def test_dave_is_refused_every_server_write_by_the_api(
    as_dave, global_server, alice_private_server
):
    assert as_dave.post("/api/servers/", STDIO, format="json").status_code == 403
    assert as_dave.post("/api/servers/", REMOTE, format="json").status_code == 403
    assert (
        as_dave.patch("/api/servers/time/", {"args": ["-c", "id"]}, format="json").status_code
        == 403
    )
    assert as_dave.post("/api/servers/time/test/").status_code == 403
    assert as_dave.post("/api/servers/time/discover/").status_code == 403
    assert as_dave.get("/api/servers/time/live/").status_code == 403
    assert as_dave.delete("/api/servers/time/").status_code == 403
    # alice's private server is not even visible to him
    assert as_dave.delete(f"/api/servers/{alice_private_server.name}/").status_code == 404
    assert as_dave.get(f"/api/servers/{alice_private_server.name}/").status_code == 404
    assert set(McpServer.objects.values_list("name", flat=True)) == {"time", "alice-notes"}
    assert McpServer.objects.get(name="time").args == []


def test_a_superuser_defines_changes_and_deletes_servers(as_admin, global_server):
    assert (
        as_admin.post("/api/servers/", {**STDIO, "enabled": False}, format="json").status_code
        == 201
    )
    assert (
        as_admin.patch("/api/servers/shell/", {"args": ["-c", "true"]}, format="json").status_code
        == 200
    )
    assert as_admin.delete("/api/servers/shell/").status_code == 204


def test_change_permission_without_the_stdio_permission_reaches_remote_servers_only(
    dave, global_server
):
    grant(dave, "add_mcpserver", "change_mcpserver", "view_mcpserver")
    as_dave = api_client(dave)

    assert (
        as_dave.post("/api/servers/", {**REMOTE, "enabled": False}, format="json").status_code
        == 201
    )
    assert (
        as_dave.patch("/api/servers/remote/", {"description": "ok"}, format="json").status_code
        == 200
    )
    refused = as_dave.post("/api/servers/", STDIO, format="json")
    assert refused.status_code == 403 and "stdio" in refused.json()["detail"]
    assert (
        as_dave.patch("/api/servers/time/", {"description": "x"}, format="json").status_code == 403
    )
    assert (
        as_dave.patch(
            "/api/servers/remote/", {"transport": "stdio", "command": "/bin/sh"}, format="json"
        ).status_code
        == 403
    )
    assert as_dave.delete("/api/servers/remote/").status_code == 403  # no delete permission

    grant(dave, "manage_stdio_server")
    assert (
        api_client(dave)
        .post("/api/servers/", {**STDIO, "enabled": False}, format="json")
        .status_code
        == 201
    )


def test_dave_is_refused_server_operations_on_the_pages(client, dave, global_server):
    client.force_login(dave)

    assert client.post("/servers/time/test/").status_code == 403
    assert client.post("/servers/time/discover/").status_code == 403
    assert client.get("/servers/time/live/").status_code == 403


def test_the_admin_keeps_stdio_servers_read_only_without_the_stdio_permission(
    client, dave, global_server
):
    grant(dave, "add_mcpserver", "change_mcpserver", "view_mcpserver", "delete_mcpserver")
    client.force_login(dave)
    form = {
        "name": "shell2",
        "transport": "stdio",
        "command": "/bin/sh",
        "args": "",
        "env": "",
        "headers": "",
        "timeout": "",
        "visibility": "global",
        "enabled": "on",
        "cwd": "",
        "url": "",
    }

    added = client.post("/admin/catalog/mcpserver/add/", form)
    changed = client.post(
        f"/admin/catalog/mcpserver/{global_server.pk}/change/", {**form, "name": "time"}
    )
    deleted = client.post(f"/admin/catalog/mcpserver/{global_server.pk}/delete/", {"post": "yes"})

    assert added.status_code == 200 and "manage stdio servers" in added.content.decode()
    assert changed.status_code == 403
    assert deleted.status_code == 403
    assert list(McpServer.objects.values_list("name", "command")) == [("time", "mcp-server-time")]


def test_shared_llm_providers_follow_the_model_permission_not_staff_status(as_dave, dave, as_admin):
    from apps.llm.services import create_provider

    shared = create_provider(
        actor=None,
        name="Team LM Studio",
        kind="openai",
        base_url="http://127.0.0.1:9/v1",
        shared=True,
    )

    assert as_dave.patch(
        f"/api/llm/providers/{shared.pk}/", {"default_model": "x"}, format="json"
    ).status_code in (403, 404)
    assert as_dave.delete(f"/api/llm/providers/{shared.pk}/").status_code in (403, 404)
    assert (
        as_admin.patch(
            f"/api/llm/providers/{shared.pk}/", {"default_model": "x"}, format="json"
        ).status_code
        == 200
    )

    dave.user_permissions.add(
        Permission.objects.get(content_type__app_label="llm", codename="change_provider")
    )
    allowed = api_client(dave).patch(
        f"/api/llm/providers/{shared.pk}/", {"default_model": "y"}, format="json"
    )
    assert allowed.status_code == 200
