"""`${user:NAME}` in an imported `.mcp.json` declares a user variable; export writes it back the same way."""

from __future__ import annotations

import json

import pytest

from apps.catalog.importing import export_servers, import_mcp_json
from apps.catalog.mcp_json import McpJsonError, parse_mcp_json
from apps.catalog.models import McpServer

FILE = {
    "mcpServers": {
        "github": {
            "command": "npx",
            "args": ["-y", "github-mcp"],
            "env": {"GITHUB_TOKEN": "${user:GITHUB_TOKEN}", "HOST": "${GH_HOST}"},
        },
        "jira": {
            "type": "http",
            "url": "https://jira.example.com/mcp?site=${user:SITE}",
            "headers": {"Authorization": "Bearer ${user:JIRA_TOKEN}"},
        },
    }
}


@pytest.mark.django_db
def test_import_declares_the_variables_and_export_writes_them_back(admin_user):
    import_mcp_json(text=json.dumps(FILE), environ={"GH_HOST": "github.com"})

    github, jira = McpServer.objects.get(name="github"), McpServer.objects.get(name="jira")
    exported = json.loads(export_servers().text)["mcpServers"]

    assert [(v.name, v.used_in, v.required) for v in github.user_variable_list()] == [
        ("GITHUB_TOKEN", "env GITHUB_TOKEN", True)
    ]
    assert [(v.name, v.used_in) for v in jira.user_variable_list()] == [
        ("JIRA_TOKEN", "header Authorization"),
        ("SITE", "URL"),
    ]
    assert github.env == {"GITHUB_TOKEN": "${user:GITHUB_TOKEN}", "HOST": "github.com"}
    assert exported["github"]["env"] == {"GITHUB_TOKEN": "${user:GITHUB_TOKEN}", "HOST": "${HOST}"}
    assert exported["jira"]["headers"] == {"Authorization": "Bearer ${user:JIRA_TOKEN}"}
    assert exported["jira"]["url"] == "https://jira.example.com/mcp?site=${user:SITE}"
    assert "GITHUB_TOKEN" not in export_servers().variables, (
        "nothing to set before re-importing: users fill it"
    )


def test_a_user_variable_in_arguments_is_refused_naming_the_entry():
    bad = {"mcpServers": {"github": {"command": "npx", "args": ["--token", "${user:T}"]}}}

    with pytest.raises(McpJsonError) as error:
        parse_mcp_json(json.dumps(bad), environ={})

    assert "mcpServers.github.args: ${user:NAME} may only be used in env values" in str(error.value)


def test_a_value_mixing_a_secret_with_a_user_variable_is_still_masked_on_export(db):
    McpServer.objects.create(name="mixed", command="npx", env={"T": "${user:T}-admins-own-secret"})

    exported = export_servers().text

    assert "admins-own-secret" not in exported and '"T": "${T}"' in exported
