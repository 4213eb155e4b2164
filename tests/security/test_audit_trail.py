"""An audit record for every kind of change, whoever makes it and wherever from (admin, pages,
API, management command), visible to staff in the admin, and never holding a secret."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from auditlog.models import LogEntry
from django.test import Client
from rest_framework.test import APIClient

from apps.accounts.models import AccessToken, TokenScope
from apps.accounts.services import create_access_token
from apps.catalog.models import McpServer
from apps.toolsets.models import Endpoint, Preset
from tests.admin.browser import form_data
from tests.live_hub import hub_env

ROOT = Path(__file__).resolve().parents[2]
SECRET_ENV = "sk-live-very-secret-env-value"
SECRET_HEADER = "Bearer very-secret-header-value"


def entries(model, **filters):
    return LogEntry.objects.get_for_model(model).filter(**filters).order_by("timestamp")


def trail_text() -> str:
    rows = LogEntry.objects.values(
        "changes", "object_repr", "serialized_data", "additional_data", "changes_text"
    )
    return json.dumps(list(rows), default=str)


@pytest.fixture
def api(alice) -> tuple[APIClient, str]:
    client = APIClient()
    _, raw = create_access_token(user=alice, scope=TokenScope.API_WRITE)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}", REMOTE_ADDR="203.0.113.5")
    return client, raw


def test_admin_changes_to_a_server_are_recorded_with_secrets_hidden(client, admin_user):
    client.force_login(admin_user)
    add = "/admin/catalog/mcpserver/add/"
    form = {
        **form_data(client.get(add).content.decode()),
        "name": "remote",
        "transport": "streamable_http",
        "url": "https://mcp.example.com/mcp",
        "headers": f"Authorization={SECRET_HEADER}",
    }
    form.pop("enabled", None)  # no discovery of a server that does not exist

    added = client.post(
        add, form, REMOTE_ADDR="198.51.100.9", HTTP_X_FORWARDED_FOR="192.0.2.1"
    )  # a forged hop
    assert added.status_code == 302, added.context["adminform"].form.errors
    server = McpServer.objects.get(name="remote")
    change = f"/admin/catalog/mcpserver/{server.pk}/change/"
    edited = {
        **form_data(client.get(change).content.decode()),
        "headers": "Authorization=Bearer rotated-secret",
        "description": "docs",
    }
    edited.pop("enabled", None)
    assert client.post(change, edited).status_code == 302

    created, updated = entries(McpServer)
    assert (created.action, updated.action) == (LogEntry.Action.CREATE, LogEntry.Action.UPDATE)
    assert created.actor == admin_user and created.additional_data == {"source": "admin"}
    assert created.remote_addr == "198.51.100.9"
    assert updated.changes_dict["headers"] == [
        "[secret]",
        "[secret]",
    ]  # that it changed, not to what
    assert updated.changes_dict["description"] == ["", "docs"]
    assert SECRET_HEADER not in trail_text() and "rotated-secret" not in trail_text()


def test_api_changes_to_tokens_endpoints_tools_presets_and_teams_are_recorded(
    api, alice, global_server, make_tool
):
    client, raw = api
    make_tool(global_server, "now")
    slug = alice.endpoints.get().slug

    token = client.post("/api/tokens/", {"name": "ci", "scope": "api_read"}, format="json").json()
    assert (
        client.put(
            f"/api/endpoints/{slug}/enabled-tools/", {"tools": ["time.now"]}, format="json"
        ).status_code
        == 200
    )
    assert (
        client.patch(
            f"/api/endpoints/{slug}/tools/time.now/", {"enabled": False}, format="json"
        ).status_code
        == 200
    )
    assert (
        client.post(
            "/api/presets/", {"name": "mine", "tools": ["time.now"]}, format="json"
        ).status_code
        == 201
    )
    assert (
        client.post("/api/teams/", {"name": "Ops", "slug": "ops"}, format="json").status_code == 201
    )
    assert (
        client.patch(f"/api/endpoints/{slug}/", {"name": "Renamed"}, format="json").status_code
        == 200
    )
    assert client.delete(f"/api/tokens/{token['id']}/").status_code == 204

    toggles = [entry.changes_dict["tools"] for entry in entries(Endpoint, changes__has_key="tools")]
    assert {"type": "m2m", "operation": "add", "objects": ["time.now"]} in toggles
    assert {"type": "m2m", "operation": "delete", "objects": ["time.now"]} in toggles
    for model, action in [
        (AccessToken, "CREATE"),
        (AccessToken, "UPDATE"),
        (Preset, "CREATE"),
        (Endpoint, "UPDATE"),
    ]:
        found = entries(
            model, action=getattr(LogEntry.Action, action), additional_data__source="api"
        )
        assert found.exists(), (model, action)
        assert {entry.actor for entry in found} == {alice}
        assert {entry.remote_addr for entry in found} == {"203.0.113.5"}
    from apps.accounts.models import Membership, Team

    assert entries(Team, additional_data__source="api").exists() and entries(Membership).exists()
    assert raw not in trail_text() and token["token"] not in trail_text()
    digest = AccessToken.objects.get(pk=token["id"]).digest
    assert digest not in trail_text()


def test_page_changes_are_recorded_as_from_the_pages(client, alice):
    client.force_login(alice)

    response = client.post(
        "/endpoint/new/",
        {
            "name": "Laptop",
            "naming_strategy": "hybrid",
            "mode": "static",
            "token_budget": "1000",
            "budget_enforced": "on",
        },
    )

    assert response.status_code == 302
    entry = entries(Endpoint, action=LogEntry.Action.CREATE).last()
    assert entry.actor == alice and entry.additional_data == {"source": "pages"}


@pytest.mark.django_db(transaction=True)
def test_management_commands_are_recorded_as_commands(alice):
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "mcp_token",
            "create",
            "--user",
            "alice",
            "--scope",
            "api_read",
        ],
        cwd=ROOT,
        env=hub_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr

    entry = entries(AccessToken, action=LogEntry.Action.CREATE).last()
    assert entry.additional_data == {"source": "command", "command": "mcp_token"}
    raw = result.stdout.split("store it now): ")[1].split()[0]
    assert raw not in trail_text()


def test_staff_read_the_trail_in_the_admin_with_filters_and_dave_cannot(admin_user, dave, alice):
    create_access_token(user=alice, name="x")
    admin, staff_without_perms = Client(), Client()
    admin.force_login(admin_user)
    staff_without_perms.force_login(dave)

    listing = admin.get("/admin/auditlog/logentry/", {"source": "system"})

    assert listing.status_code == 200 and "x" in listing.content.decode()
    assert (
        admin.get("/admin/auditlog/logentry/", {"source": "api", "action__exact": "0"}).status_code
        == 200
    )
    assert staff_without_perms.get("/admin/auditlog/logentry/").status_code == 403


def test_llm_providers_are_audited_without_their_api_key(api, alice):
    from apps.llm.models import Provider

    client, _ = api
    key = "sk-provider-secret-key-0123456789"
    created = client.post(
        "/api/llm/providers/",
        {"name": "Local", "kind": "openai", "base_url": "http://127.0.0.1:1234/v1", "api_key": key},
        format="json",
    )
    assert created.status_code == 201, created.content

    entry = entries(Provider, action=LogEntry.Action.CREATE).last()
    assert entry.actor == alice and entry.additional_data == {"source": "api"}
    assert key not in trail_text()


def test_a_tool_setting_changed_on_an_endpoint_is_recorded(alice, global_server, make_tool):
    from apps.toolsets.models import EndpointTool
    from apps.toolsets.services import enable_tools

    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=[make_tool(global_server, "now")])
    setting = EndpointTool.objects.get(endpoint=endpoint)

    setting.name_override = "clock"
    setting.save()

    entry = entries(EndpointTool, action=LogEntry.Action.UPDATE).last()
    assert entry.changes_dict["name_override"] == ["", "clock"]


def test_activation_patterns_are_audited(api, alice):
    from apps.discovery.models import ActivationPattern

    client, _ = api
    created = client.post(
        f"/api/endpoints/{alice.endpoints.get().slug}/patterns/",
        {"pattern": "clock", "targets": ["time.now"]},
        format="json",
    )

    assert created.status_code == 201, created.content
    entry = entries(ActivationPattern, action=LogEntry.Action.CREATE).last()
    assert entry.actor == alice and entry.additional_data == {"source": "api"}
