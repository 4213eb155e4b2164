"""--owner and --team decide who sees imported servers; alice's private import stays hers."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from apps.catalog.models import McpServer
from apps.catalog.selectors import visible_servers


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": {"notes": {"url": "https://notes.example.com/mcp"}}}))
    return path


def run_import(path, *args: str) -> str:
    out = io.StringIO()
    call_command("mcp_import", str(path), *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_without_flags_everyone_sees_the_servers(config_file, alice, charlie):
    run_import(config_file)

    assert list(visible_servers(charlie).values_list("name", flat=True)) == ["notes"]
    assert McpServer.objects.get(name="notes").visibility == McpServer.Visibility.GLOBAL


def test_owner_makes_them_private_to_that_user(config_file, alice, bob, charlie):
    run_import(config_file, "--owner", "alice")

    notes = McpServer.objects.get(name="notes")
    assert (notes.visibility, notes.owner) == (McpServer.Visibility.PRIVATE, alice)
    assert visible_servers(alice).filter(name="notes").exists()
    assert not visible_servers(bob).filter(name="notes").exists()
    assert not visible_servers(charlie).filter(name="notes").exists()


def test_team_shares_them_with_the_team_only(config_file, team, alice, bob, charlie):
    run_import(config_file, "--team", "alices-team")

    notes = McpServer.objects.get(name="notes")
    assert (notes.visibility, notes.team) == (McpServer.Visibility.TEAM, team)
    assert visible_servers(bob).filter(name="notes").exists()
    assert not visible_servers(charlie).filter(name="notes").exists()


def test_reimporting_with_the_same_owner_is_unchanged(config_file, alice):
    run_import(config_file, "--owner", "alice")

    assert "unchanged notes" in run_import(config_file, "--owner", "alice")


def test_an_import_cannot_take_over_another_users_private_server(config_file, alice, charlie):
    run_import(config_file, "--owner", "alice")
    before = list(McpServer.objects.values_list("name", "visibility", "owner", "config_hash"))

    with pytest.raises(
        CommandError,
        match="mcpServers.notes: server 'notes' already exists and is private to alice",
    ):
        run_import(config_file, "--owner", "charlie")
    with pytest.raises(
        CommandError,
        match="already exists and is private to alice; this import would make it global",
    ):
        run_import(config_file)

    assert (
        list(McpServer.objects.values_list("name", "visibility", "owner", "config_hash")) == before
    )


@pytest.mark.parametrize(
    "args,message",
    [
        (["--owner", "nobody"], "No user 'nobody'"),
        (["--team", "no-such-team"], "No team 'no-such-team'"),
        (["--owner", "alice", "--team", "alices-team"], "not both"),
    ],
)
def test_unknown_owner_or_team_is_refused(config_file, team, args, message):
    with pytest.raises(CommandError, match=message):
        run_import(config_file, *args)

    assert not McpServer.objects.exists()
