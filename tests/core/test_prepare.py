"""`./hub run`'s start-up in one process (`mcp_prepare`), and the slow part beside the serving hub."""

from __future__ import annotations

import json
import subprocess
import sys

from apps.accounts.models import User
from apps.catalog.models import HUB_SERVER, McpServer
from tests.catalog.conftest import tiny_args
from tests.live_hub import ROOT, hub_env


def _prepare(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "mcp_prepare", *args],
        cwd=ROOT,
        env=hub_env(**env),
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_one_process_prepares_everything_and_says_when_an_admin_is_missing(
    transactional_db, tmp_path
):
    found = tmp_path / ".mcp.json"
    found.write_text(json.dumps({"mcpServers": {"tiny": {"command": "tiny-server"}}}))

    first = _prepare(MCP_JSON_PATH=str(found))

    assert first.returncode == 3, first.stdout + first.stderr  # ready, but nobody can sign in yet
    assert "Traceback" not in first.stderr, first.stderr
    assert McpServer.objects.filter(name="tiny", command="tiny-server").exists()
    assert McpServer.objects.get(name=HUB_SERVER).tools.exists()  # the hub's own tools
    User.objects.create_superuser("admin", "admin@example.com", "pw")
    McpServer.objects.filter(name="tiny").update(command="edited-in-the-hub")

    again = _prepare(MCP_JSON_PATH=str(found))

    assert again.returncode == 0, again.stdout + again.stderr
    # The found file is imported once: an edit made in the hub since is kept.
    assert McpServer.objects.get(name="tiny").command == "edited-in-the-hub"


def test_after_start_discovers_every_server_and_a_failure_does_not_stop_it(pool_host):
    McpServer.objects.create(name="tiny", command=sys.executable, args=tiny_args())
    McpServer.objects.create(name="broken", command="/nonexistent/mcp-server")

    result = _prepare("--after-start")

    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Traceback" not in output, output
    assert output.count("/nonexistent/mcp-server") == 1, output  # the table's failure, said once
    assert McpServer.objects.get(name="tiny").tools.exists()
    assert McpServer.objects.get(name="broken").status == McpServer.Status.DOWN
