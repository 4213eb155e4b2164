"""`mcp_hub_tools` puts the built-in `hub` server in the catalog; its tools are enabled like any."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from apps.catalog.models import McpServer
from apps.gateway.hub_tools import TOOLS

pytestmark = [pytest.mark.django_db]


def test_the_command_adds_the_hub_server_once_and_alice_enables_its_tools(alice):
    call_command("mcp_hub_tools", verbosity=0)
    call_command("mcp_hub_tools", verbosity=0)  # idempotent: a restart refreshes, never duplicates
    server = McpServer.objects.get(name="hub")
    assert server.is_builtin and server.status == "healthy"
    assert sorted(server.tools.values_list("name", flat=True)) == sorted(TOOLS)
    assert all(t.token_estimate > 0 for t in server.tools.all())

    call_command("mcp_enable", "--user", "alice", "hub.*", verbosity=0)
    endpoint = alice.endpoints.get(is_default=True)
    assert sorted(endpoint.tools.values_list("name", flat=True)) == sorted(TOOLS)
    call_command("mcp_enable", "--user", "alice", "--disable", "hub.cancel_run", verbosity=0)
    assert "cancel_run" not in endpoint.tools.values_list("name", flat=True)
