"""The .mcp.json that `./hub run` finds is imported once; later starts apply only what changed in
the file, and never revert or resurrect what a person changed or deleted in the hub unless asked
(`--sync`)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from apps.catalog.models import McpServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def found(tmp_path, monkeypatch):
    """The file the launcher finds ($MCP_JSON_PATH), written by the test."""
    path = tmp_path / ".mcp.json"
    monkeypatch.setenv("MCP_JSON_PATH", str(path))

    def write(servers: dict) -> None:
        path.write_text(json.dumps({"mcpServers": servers}))

    return write


def start(*args: str) -> str:
    """What `./hub run` does at start-up."""
    out = io.StringIO()
    call_command(
        "mcp_import",
        "--if-found",
        "--no-discover",
        "-v",
        "0",
        *args,
        stdout=out,
        stderr=io.StringIO(),
    )
    return out.getvalue()


def command_of(name: str) -> str:
    return McpServer.objects.get(name=name).command


def test_an_unchanged_file_changes_nothing_and_keeps_edits_made_in_the_hub(found):
    found({"time": {"command": "mcp-server-time"}})
    assert "created time" in start()
    McpServer.objects.filter(name="time").update(command="uvx")  # changed in the admin

    out = start()

    assert "unchanged since it was imported; nothing to do" in out
    assert command_of("time") == "uvx"


def test_a_changed_file_updates_what_nobody_touched_and_keeps_what_a_person_changed(found):
    found({"time": {"command": "mcp-server-time"}, "git": {"command": "mcp-server-git"}})
    start()
    server = McpServer.objects.get(name="time")
    server.command = "uvx"
    server.save()

    found({"time": {"command": "time-v2"}, "git": {"command": "git-v2"}})
    out = start()

    assert "updated git (stdio): command" in out
    assert "kept time: changed in the hub since it was imported" in out and "--sync" in out
    assert (command_of("time"), command_of("git")) == ("uvx", "git-v2")
    # Still the person's at the next change of the file.
    found({"time": {"command": "time-v3"}, "git": {"command": "git-v2"}})
    assert "kept time" in start() and command_of("time") == "uvx"


def test_a_server_deleted_in_the_hub_is_not_brought_back_unless_asked(found):
    found({"time": {"command": "mcp-server-time"}, "git": {"command": "mcp-server-git"}})
    start()
    McpServer.objects.filter(name="git").delete()

    found({"time": {"command": "time-v2"}, "git": {"command": "mcp-server-git"}})
    out = start()

    assert "not re-created git: deleted in the hub since it was imported" in out
    assert not McpServer.objects.filter(name="git").exists() and command_of("time") == "time-v2"
    assert "created git" in start("--sync")
    assert McpServer.objects.filter(name="git").exists()


def test_sync_makes_the_file_win(found):
    found({"time": {"command": "mcp-server-time"}, "git": {"command": "mcp-server-git"}})
    start()
    McpServer.objects.filter(name="time").update(command="uvx")
    found({"time": {"command": "mcp-server-time"}})

    out = start()
    assert (
        "kept git: no longer in the file" in out and McpServer.objects.filter(name="git").exists()
    )

    out = start("--sync")
    assert "updated time (stdio): command" in out and "removed git: no longer in the file" in out
    assert (
        command_of("time") == "mcp-server-time"
        and not McpServer.objects.filter(name="git").exists()
    )


def test_a_server_that_was_there_before_is_left_alone_unless_it_says_the_same(found):
    McpServer.objects.create(name="time", command="my-own-time")
    McpServer.objects.create(name="git", command="mcp-server-git")
    found({"time": {"command": "mcp-server-time"}, "git": {"command": "mcp-server-git"}})

    out = start()

    assert "kept time: it was in the hub before this file was imported" in out
    assert command_of("time") == "my-own-time"
    found({"time": {"command": "mcp-server-time"}, "git": {"command": "git-v2"}})
    assert "updated git (stdio): command" in start()  # adopted: it said the same as the file


def test_a_changed_variable_counts_as_a_changed_file(found, monkeypatch):
    monkeypatch.setenv("TIME_CMD", "time-a")
    found({"time": {"command": "${TIME_CMD}"}})
    start()

    monkeypatch.setenv("TIME_CMD", "time-b")

    assert "updated time (stdio): command" in start()
    assert command_of("time") == "time-b"


def test_a_dry_run_writes_nothing(found):
    found({"time": {"command": "mcp-server-time"}})

    out = start("--dry-run")

    assert "would be created time" in out and not McpServer.objects.exists()
    assert "created time" in start()  # the dry run recorded nothing either
