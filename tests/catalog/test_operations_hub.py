"""The admin works on a running hub: actions, live pool state, and config changes with no restart.

Everything goes through a real hub over HTTP: embedded, the web process's own in-process pool does the
work; with REDIS_URL, the Celery worker's pool does.
"""

from __future__ import annotations

import html
import json
import re
import sys

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from apps.accounts.services import create_access_token
from apps.catalog.models import McpServer
from apps.toolsets.services import enable_tools
from tests.catalog.conftest import tiny_args
from tests.live_hub import mcp_client

pytestmark = [pytest.mark.django_db(transaction=True)]

SERVERS_URL = "/admin/catalog/mcpserver/"


class AdminBrowser:
    """An admin's browser session against the hub process (logged in through a real session)."""

    def __init__(self, base_url: str, user) -> None:
        client = Client()
        client.force_login(user)
        self.http = httpx2.Client(base_url=base_url, follow_redirects=True, timeout=60)
        self.http.cookies.set("sessionid", client.cookies["sessionid"].value)

    def action(self, name: str, server: McpServer) -> list[str]:
        page = self.http.get(SERVERS_URL)
        data = {
            "csrfmiddlewaretoken": _csrf(page.text),
            "action": name,
            "_selected_action": str(server.pk),
            "index": "0",
        }
        return _messages(self.http.post(SERVERS_URL, data=data).text)

    def change_page(self, server: McpServer) -> str:
        return self.http.get(f"{SERVERS_URL}{server.pk}/change/").text


def _csrf(html: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


def _messages(page: str) -> list[str]:
    found = re.findall(r'<li class="(?:success|warning|error)">(.*?)</li>', page, re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", m)).strip() for m in found]


@pytest.fixture
def admin(hub, admin_user) -> AdminBrowser:
    return AdminBrowser(hub.base_url, admin_user)


@pytest.fixture
def tiny(transactional_db) -> McpServer:
    return McpServer.objects.create(
        name="tiny", command=sys.executable, args=tiny_args("--stderr-lines", "3", "--tag", "one")
    )


def test_test_connection_and_discover_now_report_per_server(admin, tiny):
    broken = McpServer.objects.create(
        name="broken", command=sys.executable, args=tiny_args("--fail", "no token")
    )

    tested = admin.action("test_connection", tiny) + admin.action("test_connection", broken)
    discovered = admin.action("discover_now", tiny)

    assert re.fullmatch(r"Tiny: healthy \(\d+\.\d ms\)", tested[0]), tested
    assert (
        tested[1].startswith("Broken: down: server 'broken' failed to start")
        and "no token" in tested[1]
    )
    assert discovered == ["Tiny: 8 tools, 0 resources, 0 templates, 0 prompts (8 new)"]
    assert set(tiny.tools.values_list("name", flat=True)) >= {"argv", "env", "pid"}


def test_the_server_page_shows_the_live_stderr_and_pool_counters(admin):
    # A name no other test uses: the hub's pool outlives tests and keeps counting per name.
    noisy = McpServer.objects.create(
        name="noisy-page", command=sys.executable, args=tiny_args("--stderr-lines", "3")
    )
    admin.action("test_connection", noisy)

    html = admin.change_page(noisy)

    assert "startup noise 2 " in html
    counters = dict(re.findall(r"<tr><th>([^<]+)</th><td>([^<]*)</td></tr>", html))
    assert counters["state"] == "open"
    assert (counters["open sessions"], counters["live processes"], counters["restarts"]) == (
        "1",
        "1",
        "0",
    )


@pytest.mark.anyio
async def test_a_changed_config_takes_effect_on_the_next_call_without_restart(
    hub, admin, admin_user, tiny, alice
):
    await sync_to_async(admin.action)("discover_now", tiny)
    endpoint = await sync_to_async(alice.endpoints.get)()
    await sync_to_async(lambda: enable_tools(endpoint=endpoint, tools=tiny.tools.all()))()
    token = (await sync_to_async(create_access_token)(user=alice, name="hot reload"))[1]
    admin_token = (await sync_to_async(create_access_token)(user=admin_user, name="ops"))[1]
    change = {"args": tiny_args("--tag", "two"), "env": {"GREETING": "hello"}}

    async with mcp_client(hub.url(endpoint.path), token) as client:
        before = await client.call_tool("argv", {})
        # Through the hub's REST API: the process serving MCP sees the change as any writer makes it.
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {admin_token}"}) as http:
            patched = await http.patch(hub.url("/api/servers/tiny/"), json=change)
        after = await client.call_tool("argv", {})
        greeting = await client.call_tool("env", {"name": "GREETING"})

    assert patched.status_code == 200, patched.text
    assert json.loads(before.content[0].text)[-1] == "one"
    assert json.loads(after.content[0].text)[-1] == "two"
    assert greeting.content[0].text == "hello"
