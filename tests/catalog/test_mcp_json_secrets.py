"""Secrets read from a config file are encrypted in the database and never echoed back."""

from __future__ import annotations

import io
import json

from django.core.management import call_command
from django.db import connection

from apps.catalog.models import McpServer


def test_the_raw_row_of_an_imported_server_holds_no_plaintext_secret(db, tmp_path, monkeypatch):
    monkeypatch.setenv("NOTES_TOKEN", "notes-header-plaintext")
    path = tmp_path / ".mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "github": {"command": "npx", "env": {"GITHUB_TOKEN": "ghp_plaintextSecret42"}},
                    "notes": {
                        "url": "https://notes.example.com/mcp",
                        "headers": {"Authorization": "${NOTES_TOKEN}"},
                    },
                }
            }
        )
    )
    out, err = io.StringIO(), io.StringIO()

    call_command("mcp_import", str(path), stdout=out, stderr=err)

    with connection.cursor() as cursor:
        cursor.execute("SELECT env, headers FROM catalog_mcpserver ORDER BY name")
        raw = json.dumps(cursor.fetchall())
    assert "ghp_plaintextSecret42" not in raw and "notes-header-plaintext" not in raw
    assert McpServer.objects.get(name="github").env == {"GITHUB_TOKEN": "ghp_plaintextSecret42"}
    assert "plaintext" not in out.getvalue() + err.getvalue()
