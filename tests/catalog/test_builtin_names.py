"""The built-in server's name is reserved: no import, admin form or API call takes it over, and
exports leave the built-in server out (another hub makes its own; there is nothing to connect to)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from apps.catalog.forms import McpServerForm
from apps.catalog.models import HUB_SERVER, McpServer
from apps.gateway.hub_tools import ensure_hub_server

pytestmark = pytest.mark.django_db


@pytest.fixture
def hub_server() -> McpServer:
    return ensure_hub_server()


def builtin_state() -> tuple:
    server = McpServer.objects.get(name=HUB_SERVER)
    return server.url, server.transport, server.command, server.tools.count()


def test_an_imported_server_named_hub_is_refused_and_the_builtin_is_untouched(hub_server, tmp_path):
    before = builtin_state()
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps({"mcpServers": {"hub": {"command": "npx", "args": ["-y", "other-hub"]}}})
    )

    with pytest.raises(CommandError) as failure:
        call_command("mcp_import", str(path), stdout=io.StringIO(), stderr=io.StringIO())

    assert "mcpServers.hub.name: The name “hub” is reserved for the hub's own tools" in str(
        failure.value
    )
    assert builtin_state() == before


def test_an_import_before_the_builtin_exists_cannot_take_its_name(db, tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"hub": {"url": "https://hub.example.com/mcp"}}}))

    with pytest.raises(CommandError, match="reserved for the hub's own tools"):
        call_command("mcp_import", str(path), stdout=io.StringIO(), stderr=io.StringIO())

    assert not McpServer.objects.filter(name=HUB_SERVER).exists()


def test_the_api_refuses_the_reserved_name(admin_client, db):
    response = admin_client.post(
        "/api/servers/",
        {"name": "hub", "transport": "streamable_http", "url": "https://x.example.com/mcp"},
        content_type="application/json",
    )

    assert response.status_code == 400
    assert "reserved for the hub's own tools" in json.dumps(response.json())
    assert not McpServer.objects.filter(name=HUB_SERVER).exists()


def test_the_admin_form_refuses_the_reserved_name(db):
    form = McpServerForm(
        data={
            "name": "hub",
            "transport": "streamable_http",
            "url": "https://x.example.com/mcp",
            "visibility": "global",
            "timeout": 30,
            "args": "",
            "env": "",
            "headers": "",
        }
    )

    assert not form.is_valid()
    assert "reserved for the hub's own tools" in form.errors["name"][0]


def test_the_builtin_server_itself_still_validates(hub_server):
    hub_server.full_clean(exclude=["url"])  # no error: it is the built-in


def test_export_leaves_the_builtin_server_out(hub_server):
    McpServer.objects.create(name="time", command="mcp-server-time")
    out = io.StringIO()

    call_command("mcp_export", stdout=out, stderr=io.StringIO())

    servers = json.loads(out.getvalue())["mcpServers"]
    assert list(servers) == ["time"]
    assert HUB_SERVER not in out.getvalue()
