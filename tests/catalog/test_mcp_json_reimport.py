"""Importing the same file again is safe: servers are matched by name and only real changes count."""

from __future__ import annotations

import io
import json

from django.core.management import call_command

from apps.catalog.models import McpServer


def run_import(path, *args: str) -> str:
    out = io.StringIO()
    call_command("mcp_import", str(path), *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def write(path, servers: dict) -> None:
    path.write_text(json.dumps({"mcpServers": servers}))


def hashes() -> dict[str, str]:
    return dict(McpServer.objects.values_list("name", "config_hash"))


CONFIG = {
    "github": {
        "command": "npx",
        "args": ["-y", "server-github"],
        "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"},
    },
    "Docs Search": {
        "url": "https://docs.example.com/mcp",
        "headers": {"Authorization": "Bearer d0cs"},
    },
    "old": {"command": "old-server", "disabled": True},
}


def test_a_second_import_of_the_same_file_changes_nothing(db, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_1")
    path = tmp_path / ".mcp.json"
    write(path, CONFIG)
    run_import(path)
    before = hashes()
    updated_at = dict(McpServer.objects.values_list("name", "updated_at"))

    out = run_import(path)

    assert "unchanged github (stdio)" in out
    assert "unchanged docs-search (streamable_http)" in out
    assert "3 unchanged" in out
    assert hashes() == before
    assert dict(McpServer.objects.values_list("name", "updated_at")) == updated_at


def test_a_changed_entry_updates_the_server_in_place(db, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_1")
    path = tmp_path / ".mcp.json"
    write(path, CONFIG)
    run_import(path)
    github = McpServer.objects.get(name="github")
    before = hashes()

    monkeypatch.setenv("GITHUB_TOKEN", "ghp_rotated")
    out = run_import(path)

    assert "updated github (stdio): env" in out
    assert "ghp_rotated" not in out
    assert McpServer.objects.get(name="github").pk == github.pk
    assert McpServer.objects.get(name="github").env == {"GITHUB_TOKEN": "ghp_rotated"}
    assert hashes()["github"] != before["github"]
    assert hashes()["docs-search"] == before["docs-search"]


def test_an_entry_that_switches_transport_drops_the_old_transport_fields(db, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_1")
    path = tmp_path / ".mcp.json"
    write(path, CONFIG)
    run_import(path)

    write(path, {**CONFIG, "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}})
    out = run_import(path)

    github = McpServer.objects.get(name="github")
    assert "updated github (streamable_http)" in out
    assert (github.command, github.args, github.env) == ("", [], {})
    assert github.url == "https://api.githubcopilot.com/mcp/"


def test_reenabling_in_the_file_reenables_the_server(db, tmp_path):
    path = tmp_path / ".mcp.json"
    write(path, {"old": {"command": "old-server", "disabled": True}})
    run_import(path)

    write(path, {"old": {"command": "old-server"}})
    out = run_import(path)

    assert "updated old (stdio): enabled" in out
    assert McpServer.objects.get(name="old").enabled is True


def test_what_the_file_cannot_say_is_left_as_the_admin_set_it(db, tmp_path):
    path = tmp_path / ".mcp.json"
    write(path, {"time": {"command": "mcp-server-time"}})
    run_import(path)
    McpServer.objects.filter(name="time").update(
        display_name="Clock", description="What time is it", timeout=90
    )

    out = run_import(path)

    time = McpServer.objects.get(name="time")
    assert "unchanged time (stdio)" in out
    assert (time.display_name, time.description, time.timeout) == ("Clock", "What time is it", 90)


def test_dry_run_reports_the_plan_and_writes_nothing(db, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_1")
    McpServer.objects.create(
        name="github", command="npx", args=["-y", "server-github"], env={"GITHUB_TOKEN": "ghp_1"}
    )
    McpServer.objects.create(name="old", command="older-server")
    before = hashes()
    path = tmp_path / ".mcp.json"
    write(path, CONFIG)

    out = run_import(path, "--dry-run")

    assert "would be unchanged github (stdio)" in out
    assert "would be created docs-search (streamable_http)" in out
    assert "would be updated old (stdio): command, enabled" in out
    assert "nothing written" in out
    assert hashes() == before
    assert McpServer.objects.get(name="old").enabled is True
