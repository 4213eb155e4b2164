"""What `./hub run` prints at start-up: one aligned table of servers, each failure said once."""

from __future__ import annotations

import re
import subprocess
import sys

from apps.catalog.models import McpServer
from tests.catalog.conftest import tiny_args
from tests.live_hub import ROOT, hub_env


def _discover(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "mcp_discover", *args],
        cwd=ROOT,
        env=hub_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_start_up_shows_a_table_and_each_error_once(pool_host):
    McpServer.objects.create(name="tiny", command=sys.executable, args=tiny_args())
    McpServer.objects.create(name="broken", command="/nonexistent/mcp-server")

    result = _discover()

    output = result.stdout + result.stderr
    assert result.returncode == 1
    assert "WARNING" not in output and "CommandError" not in output and "Traceback" not in output, (
        output
    )
    assert output.count("/nonexistent/mcp-server") == 1, output
    lines = result.stdout.splitlines()
    header, rows = lines[0], lines[1:3]
    assert header.split() == [
        "server",
        "status",
        "tools",
        "resources",
        "prompts",
        "since",
        "last",
        "discovery",
    ]
    assert [row.split()[:3] for row in rows] == [["broken", "down", "-"], ["tiny", "healthy", "8"]]
    assert {row.index(row.split()[1]) for row in rows} == {header.index("status")}  # aligned
    assert rows[1].endswith("8 new"), output  # counts in words, not `(+8 ~0 -0)`
    assert re.search(r"2 server\(s\) discovered in [\d.]+ s: 1 healthy, 1 down", output)


def test_a_second_start_says_nothing_changed(pool_host):
    McpServer.objects.create(name="tiny", command=sys.executable, args=tiny_args())
    _discover()

    result = _discover()

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[1].endswith("no change")
