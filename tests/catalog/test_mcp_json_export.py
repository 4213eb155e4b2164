"""mcp_export writes the catalog back as a file clients (and mcp_import) understand."""

from __future__ import annotations

import io
import json
import stat

import pytest
from django.core.management import CommandError, call_command

from apps.catalog.models import McpServer


@pytest.fixture
def catalog(db) -> None:
    McpServer.objects.create(
        name="github",
        command="npx",
        args=["-y", "server-github"],
        env={"GITHUB_TOKEN": "ghp_secret"},
    )
    McpServer.objects.create(
        name="alice-notes",
        display_name="Alice Notes",
        transport="streamable_http",
        url="https://notes.example.com/mcp",
        headers={"Authorization": "Bearer notes-secret"},
        timeout=120,
    )
    McpServer.objects.create(
        name="legacy", transport="sse", url="http://legacy:9000/sse", enabled=False
    )


def export(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("mcp_export", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_claude_format_without_secrets_keeps_keys_with_placeholders(catalog):
    out, err = export()

    servers = json.loads(out)["mcpServers"]
    assert servers["github"] == {
        "command": "npx",
        "args": ["-y", "server-github"],
        "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"},
    }
    assert servers["Alice Notes"] == {
        "type": "http",
        "url": "https://notes.example.com/mcp",
        "headers": {"Authorization": "${MCP_ALICE_NOTES_AUTHORIZATION}"},
        "timeout": 120,
    }
    assert servers["legacy"] == {"type": "sse", "url": "http://legacy:9000/sse", "disabled": True}
    assert "secret" not in out
    assert "GITHUB_TOKEN, MCP_ALICE_NOTES_AUTHORIZATION" in err


def test_vscode_format_types_every_server(catalog):
    out, _ = export("--format", "vscode")

    servers = json.loads(out)["servers"]
    assert {name: entry["type"] for name, entry in servers.items()} == {
        "Alice Notes": "http",
        "github": "stdio",
        "legacy": "sse",
    }


def test_include_secrets_writes_them_to_an_owner_only_file(catalog, tmp_path):
    target = tmp_path / "export.json"

    out, err = export("--include-secrets", "--output", str(target))

    servers = json.loads(target.read_text())["mcpServers"]
    assert servers["github"]["env"] == {"GITHUB_TOKEN": "ghp_secret"}
    assert servers["Alice Notes"]["headers"] == {"Authorization": "Bearer notes-secret"}
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert "wrote 3 server(s)" in out and err == ""


def roundtrip(tmp_path, *export_args: str) -> tuple[dict, dict]:
    """Export, empty the catalog, import the file back; the (name, hash, enabled, ...) rows before and after."""

    def rows() -> dict:
        fields = ("name", "config_hash", "enabled", "display_name", "transport")
        return {row[0]: row for row in McpServer.objects.values_list(*fields)}

    before = rows()
    target = tmp_path / "roundtrip.json"
    export("--output", str(target), *export_args)
    McpServer.objects.all().delete()
    call_command("mcp_import", str(target), stdout=io.StringIO(), stderr=io.StringIO())
    return before, rows()


@pytest.mark.parametrize("fmt", ["claude", "vscode"])
def test_round_trip_with_secrets_restores_the_same_servers(catalog, tmp_path, monkeypatch, fmt):
    before, after = roundtrip(tmp_path, "--include-secrets", "--format", fmt)

    assert after == before


def test_round_trip_without_secrets_needs_the_variables_and_then_matches(
    catalog, tmp_path, monkeypatch
):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    monkeypatch.setenv("MCP_ALICE_NOTES_AUTHORIZATION", "Bearer notes-secret")

    before, after = roundtrip(tmp_path)

    assert after == before
    assert McpServer.objects.get(name="github").env == {"GITHUB_TOKEN": "ghp_secret"}


def test_a_file_without_secrets_is_refused_until_the_variables_are_set(
    catalog, tmp_path, monkeypatch
):
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.delenv("MCP_ALICE_NOTES_AUTHORIZATION", raising=False)
    target = tmp_path / "export.json"
    export("--output", str(target))

    with pytest.raises(CommandError) as failure:
        call_command("mcp_import", str(target), stdout=io.StringIO())

    assert (
        "mcpServers.github.env.GITHUB_TOKEN: environment variable GITHUB_TOKEN is not set"
        in str(failure.value)
    )
    assert McpServer.objects.get(name="github").env == {"GITHUB_TOKEN": "ghp_secret"}


def test_an_empty_catalog_exports_an_empty_file(db):
    out, _ = export()

    assert json.loads(out) == {"mcpServers": {}}
