"""An admin imports the config files their MCP clients already have."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from apps.catalog.models import McpServer

FIXTURES = Path(__file__).parent / "fixtures"


def run_import(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("mcp_import", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_claude_desktop_config_becomes_global_stdio_servers(db):
    out, _ = run_import(str(FIXTURES / "claude_desktop.json"))

    github = McpServer.objects.get(name="github")
    assert github.transport == "stdio"
    assert github.command == "docker"
    assert github.args[-1] == "ghcr.io/github/github-mcp-server"
    assert github.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_desktopSecretToken123"}
    assert github.visibility == McpServer.Visibility.GLOBAL and github.enabled
    assert "created github (stdio)" in out
    assert "4 server(s)" in out and "4 created, 0 updated, 0 unchanged" in out


def test_a_key_that_is_not_a_valid_name_is_normalized_and_kept_as_display_name(db):
    run_import(str(FIXTURES / "claude_desktop.json"))

    brave = McpServer.objects.get(name="brave-search")
    assert brave.display_name == "Brave Search"
    assert McpServer.objects.get(name="github").display_name == ""


def test_disabled_entries_are_imported_switched_off(db):
    run_import(str(FIXTURES / "claude_desktop.json"))

    assert McpServer.objects.get(name="sqlite").enabled is False
    assert McpServer.objects.get(name="filesystem").enabled is True


def test_claude_code_project_file_expands_variables_and_defaults(db, monkeypatch):
    monkeypatch.setenv("SENTRY_TOKEN", "sntrys_secret")
    monkeypatch.setenv("API_KEY", "key-123")
    monkeypatch.setenv("PROJECT_TOOLS", "/opt/tools")
    monkeypatch.delenv("API_BASE_URL", raising=False)
    monkeypatch.delenv("LOG_LEVEL", raising=False)

    out, _ = run_import(str(FIXTURES / "claude_code.json"))

    sentry = McpServer.objects.get(name="sentry")
    assert (sentry.transport, sentry.url) == ("streamable_http", "https://mcp.sentry.dev/mcp")
    assert sentry.headers == {"Authorization": "Bearer sntrys_secret"}
    assert McpServer.objects.get(name="linear").transport == "sse"
    api = McpServer.objects.get(name="api-server")
    assert api.url == "https://api.example.com/mcp"
    assert api.headers == {"X-API-Key": "key-123"}
    shared = McpServer.objects.get(name="shared-server")
    assert shared.command == "/opt/tools/bin/server"
    assert shared.args == ["--config", "/opt/tools/config.json"]
    assert shared.env == {"LOG_LEVEL": "info"}
    assert "created sentry (streamable_http)" in out and "created linear (sse)" in out


def test_a_set_variable_beats_its_default(db, monkeypatch):
    for name, value in {"SENTRY_TOKEN": "t", "API_KEY": "k", "PROJECT_TOOLS": "/p"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("API_BASE_URL", "http://localhost:9000")

    run_import(str(FIXTURES / "claude_code.json"))

    assert McpServer.objects.get(name="api-server").url == "http://localhost:9000/mcp"


def test_cursor_config_with_url_only_means_streamable_http_and_env_prefix_expands(db, monkeypatch):
    monkeypatch.setenv("CONTEXT7_API_KEY", "ctx7-secret")
    monkeypatch.setenv("PGPASSWORD", "pg-secret")

    run_import(str(FIXTURES / "cursor.json"))

    context7 = McpServer.objects.get(name="context7")
    assert context7.transport == "streamable_http"
    assert context7.headers == {"CONTEXT7_API_KEY": "ctx7-secret"}
    assert McpServer.objects.get(name="postgres").env == {"PGPASSWORD": "pg-secret"}
    assert McpServer.objects.get(name="web-search").cwd == "/home/alice/tools/web-search"


def test_vscode_config_with_comments_inputs_and_disabled_entries(db, monkeypatch):
    monkeypatch.setenv("PERPLEXITY_API_KEY", "pplx-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "gho_secret")

    out, err = run_import(str(FIXTURES / "vscode.json"))

    perplexity = McpServer.objects.get(name="perplexity")
    assert perplexity.display_name == "Perplexity"
    assert perplexity.env == {"PERPLEXITY_API_KEY": "pplx-secret"}
    github = McpServer.objects.get(name="github")
    assert (github.transport, github.headers) == (
        "streamable_http",
        {"Authorization": "Bearer gho_secret"},
    )
    assert McpServer.objects.get(name="fetch").enabled is False
    memory = McpServer.objects.get(name="memory")
    assert (memory.transport, memory.url) == ("sse", "http://memory-mcp:8080/sse")
    assert "warning: inputs: ignored" in err
    assert "warning: servers.memory.gallery: unknown key, ignored" in err
    assert "4 created" in out


@pytest.mark.parametrize("kind", ["http", "streamable-http", "streamableHttp", "sse", "SSE"])
def test_every_spelling_of_a_remote_type_is_understood(db, tmp_path, kind):
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps({"mcpServers": {"remote": {"type": kind, "url": "https://r.example.com/mcp"}}})
    )

    run_import(str(path))

    expected = "sse" if kind.lower() == "sse" else "streamable_http"
    assert McpServer.objects.get(name="remote").transport == expected
