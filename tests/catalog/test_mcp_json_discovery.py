"""With no PATH, mcp_import looks where the usual MCP seed tools look, and says which file it used."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from apps.catalog.mcp_json import candidate_paths, find_mcp_json
from apps.catalog.models import McpServer


@pytest.fixture
def places(db, tmp_path, monkeypatch):
    """A fake home and a project directory inside a parent directory, as cwd."""
    home, project = tmp_path / "home", tmp_path / "work" / "project"
    (home / ".lmstudio").mkdir(parents=True)
    project.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("MCP_JSON_PATH", raising=False)
    monkeypatch.chdir(project)
    return {
        "env": tmp_path / "explicit.json",
        "lmstudio": home / ".lmstudio" / "mcp.json",
        "cwd": project / ".mcp.json",
        "home": home / ".mcp.json",
        "parent": tmp_path / "work" / ".mcp.json",
    }


def put(path, server_name: str) -> None:
    path.write_text(json.dumps({"mcpServers": {server_name: {"command": server_name}}}))


def run_import(*args: str) -> str:
    out = io.StringIO()
    call_command("mcp_import", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_search_order(places, monkeypatch):
    monkeypatch.setenv("MCP_JSON_PATH", str(places["env"]))

    assert candidate_paths() == [places[k] for k in ("env", "lmstudio", "cwd", "home", "parent")]


@pytest.mark.parametrize(
    "winner,losers",
    [
        ("env", ["lmstudio", "cwd", "home", "parent"]),
        ("lmstudio", ["cwd", "home", "parent"]),
        ("cwd", ["home", "parent"]),
        ("home", ["parent"]),
        ("parent", []),
    ],
)
def test_the_first_file_found_wins_and_is_named(places, monkeypatch, winner, losers):
    monkeypatch.setenv("MCP_JSON_PATH", str(places["env"]))
    for place in [winner, *losers]:
        put(places[place], f"from-{place}")

    out = run_import()

    assert f"using {places[winner]}" in out
    assert list(McpServer.objects.values_list("name", flat=True)) == [f"from-{winner}"]


def test_a_missing_explicit_path_falls_through_to_the_next_place(places, monkeypatch):
    monkeypatch.setenv("MCP_JSON_PATH", str(places["env"]))
    put(places["home"], "from-home")

    assert find_mcp_json() == places["home"]


def test_nothing_found_is_an_error_listing_where_it_looked(places):
    with pytest.raises(CommandError) as failure:
        run_import()

    message = str(failure.value)
    assert "No MCP config file found" in message
    for place in ("lmstudio", "cwd", "home", "parent"):
        assert str(places[place]) in message


def test_the_launcher_mode_finds_nothing_quietly(places):
    out = run_import("--if-found")

    assert "nothing to import" in out
    assert not McpServer.objects.exists()
