"""Filled values never appear in a page, an export, the admin or the live hub's logs."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import Client

from apps.accounts.services import create_access_token
from apps.credentials.services import save_credentials
from apps.toolsets.services import enable_tools
from tests.live_hub import mcp_client

SECRET = "alice-never-shown-5e1d"
HTTP_SECRET = "alice-http-never-shown-77aa"


@pytest.fixture
def filled(alice, admin_user, stdio_server, http_server):
    enable_tools(
        endpoint=alice.endpoints.get(), tools=[*stdio_server.tools.all(), *http_server.tools.all()]
    )
    save_credentials(user=alice, server=stdio_server, values={"TOKEN": SECRET})
    save_credentials(
        user=alice, server=http_server, values={"TOKEN": HTTP_SECRET, "KEY": HTTP_SECRET + "-k"}
    )
    save_credentials(user=admin_user, server=stdio_server, values={"TOKEN": SECRET + "-admin"})


def _pages(user, paths: list[str]) -> str:
    browser = Client()
    browser.force_login(user)
    bodies = []
    for path in paths:
        response = browser.get(path)
        assert response.status_code == 200, (path, response.status_code)
        bodies.append(response.content.decode())
    return "\n".join(bodies)


@pytest.mark.django_db(transaction=True)
def test_pages_admin_and_exports_show_names_never_values(
    filled, alice, admin_user, stdio_server, http_server, capsys
):
    alice_pages = _pages(
        alice, ["/tools/", "/servers/wstdio/credentials/", "/servers/whttp/credentials/"]
    )
    admin_pages = _pages(
        admin_user,
        [
            "/servers/",
            f"/admin/catalog/mcpserver/{stdio_server.pk}/change/",
            f"/admin/catalog/mcpserver/{http_server.pk}/change/",
            "/admin/credentials/usercredential/",
            "/admin/auditlog/logentry/",
            "/servers/export/?format=claude",
        ],
    )
    call_command("mcp_export")
    export = capsys.readouterr().out

    everything = alice_pages + admin_pages + export
    assert SECRET not in everything and HTTP_SECRET not in everything
    assert "${user:TOKEN}" in export and "key=${user:KEY}" in export, (
        "export writes the variables back as written"
    )
    assert (
        alice_pages.count('<span class="badge badge-ok">set</span>') == 3
        and "Your API token" in alice_pages
    )
    assert "alice" in admin_pages and "TOKEN" in admin_pages, "the admin sees who filled what"


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("_close_thread_connections")
async def test_the_hubs_logs_never_carry_a_value(hub, filled, alice):
    from asgiref.sync import sync_to_async

    endpoint = await sync_to_async(alice.endpoints.get)()
    token = (await sync_to_async(create_access_token)(user=alice, name="logs"))[1]
    async with mcp_client(hub.url(endpoint.path), token) as client:
        assert not (await client.call_tool("wstdio__whoami", {})).is_error
        assert not (await client.call_tool("whttp__whoami", {})).is_error

    log = "\n".join(p.read_text() for p in hub.log_dir.glob("*.log"))
    assert SECRET not in log and HTTP_SECRET not in log
