"""A bad config file gets a clear error naming entry and field, and changes nothing at all."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from apps.catalog.mcp_json import parse_mcp_json_entries
from apps.catalog.models import McpServer


def snapshot() -> list[tuple]:
    return list(
        McpServer.objects.order_by("name").values_list(
            "name", "config_hash", "enabled", "display_name"
        )
    )


@pytest.fixture
def existing(db) -> list[tuple]:
    """The catalog before the bad import: one server the file also mentions, one it does not."""
    McpServer.objects.create(name="github", command="old-github", env={"TOKEN": "old"})
    McpServer.objects.create(name="time", command="mcp-server-time")
    return snapshot()


def import_text(tmp_path, text: str) -> str:
    path = tmp_path / "mcp.json"
    path.write_text(text)
    with pytest.raises(CommandError) as failure:
        call_command("mcp_import", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    return str(failure.value)


GOOD = {"command": "npx", "args": ["-y", "server-github"]}

BAD_ENTRIES = [
    ({"command": "npx", "args": "-y server"}, "mcpServers.broken.args: must be a list of strings"),
    ({"command": "npx", "args": ["-y", 3]}, "mcpServers.broken.args: must be a list of strings"),
    (
        {"command": "npx", "env": ["A=b"]},
        "mcpServers.broken.env: must be an object mapping names to string values",
    ),
    (
        {"command": "npx", "env": {"PORT": 8080}},
        "mcpServers.broken.env: must be an object mapping names",
    ),
    (
        {"command": "npx", "env": {"BAD NAME": "x"}},
        'mcpServers.broken.env.BAD NAME: "BAD NAME" is not an environment',
    ),
    (
        {"url": "https://x.example.com", "headers": {"A": 1}},
        "mcpServers.broken.headers: must be an object mapping",
    ),
    (
        {"url": "https://x.example.com", "headers": {"Bad Header": "v"}},
        "mcpServers.broken.headers.Bad Header:",
    ),
    ({"args": ["x"]}, "mcpServers.broken: needs a command (local server) or a url (remote server)"),
    (
        {"command": "npx", "url": "https://x.example.com"},
        "mcpServers.broken: has both command and url; add a type",
    ),
    (
        {"type": "websocket", "url": "wss://x.example.com"},
        'mcpServers.broken.type: unknown type "websocket"',
    ),
    (
        {"type": "http", "command": "npx"},
        "mcpServers.broken.url: missing: a http server needs a url",
    ),
    ({"type": "stdio", "url": "https://x.example.com"}, "mcpServers.broken.command: missing"),
    (
        {"url": "ftp://files.example.com/mcp"},
        "mcpServers.broken.url: must be an http:// or https:// URL",
    ),
    ({"url": "not a url"}, "mcpServers.broken.url: must be an http:// or https:// URL"),
    ({"command": ""}, "mcpServers.broken.command: must not be empty"),
    ({"command": ["npx"]}, "mcpServers.broken.command: must be a string"),
    ({"command": "npx", "disabled": "yes"}, "mcpServers.broken.disabled: must be true or false"),
    (
        {"command": "npx", "timeout": 0},
        "mcpServers.broken.timeout: must be a whole number of seconds",
    ),
    ({"command": "x" * 2000}, "mcpServers.broken.command: too long"),
    ("npx server", "mcpServers.broken: must be an object"),
]


@pytest.mark.parametrize("entry,message", BAD_ENTRIES)
def test_a_bad_entry_is_named_and_nothing_is_imported(existing, tmp_path, entry, message):
    error = import_text(
        tmp_path, json.dumps({"mcpServers": {"github": GOOD, "fresh": GOOD, "broken": entry}})
    )

    assert message in error
    assert "nothing imported" in error
    assert snapshot() == existing


@pytest.mark.parametrize(
    "text,message",
    [
        ("{not json", "not valid JSON"),
        ("[]", "must hold a JSON object"),
        ('{"servers_list": {}}', "no mcpServers object"),
        ('{"mcpServers": ["github"]}', "mcpServers: must be an object"),
        ('{"mcpServers": {}, "servers": {}}', "both mcpServers and servers"),
    ],
)
def test_a_file_of_the_wrong_shape_is_refused(existing, tmp_path, text, message):
    error = import_text(tmp_path, text)

    assert message in error
    assert snapshot() == existing


def test_an_unset_variable_names_entry_field_and_variable(existing, tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    config = {
        "servers": {
            "github": {"type": "stdio", "command": "npx", "env": {"TOKEN": "${env:GITHUB_TOKEN}"}}
        }
    }

    error = import_text(tmp_path, json.dumps(config))

    assert "servers.github.env.TOKEN: environment variable GITHUB_TOKEN is not set" in error
    assert snapshot() == existing


def test_a_vscode_input_reference_is_refused_rather_than_stored_literally(existing, tmp_path):
    config = {"servers": {"pplx": {"command": "npx", "env": {"KEY": "${input:perplexity-key}"}}}}

    error = import_text(tmp_path, json.dumps(config))

    assert "servers.pplx.env.KEY: cannot expand ${input:perplexity-key}" in error
    assert snapshot() == existing


def test_every_problem_is_reported_at_once(existing, tmp_path, monkeypatch):
    monkeypatch.delenv("NOPE", raising=False)
    config = {
        "mcpServers": {
            "one": {"command": "npx", "args": "oops"},
            "two": {"url": "https://x.example.com/${NOPE}"},
            "three": {"type": "carrier-pigeon", "url": "https://x.example.com"},
        }
    }

    error = import_text(tmp_path, json.dumps(config))

    assert "mcpServers.one.args: must be a list of strings" in error
    assert "mcpServers.two.url: environment variable NOPE is not set" in error
    assert "mcpServers.three.type: unknown type" in error


def test_two_keys_that_normalize_to_one_name_are_an_error(existing, tmp_path):
    config = {"mcpServers": {"My Server": GOOD, "my-server": GOOD}}

    error = import_text(tmp_path, json.dumps(config))

    assert (
        "mcpServers.my-server: its server name 'my-server' is also the name of mcpServers[\"My Server\"]"
        in error
    )
    assert snapshot() == existing


def test_a_key_with_nothing_usable_is_an_error(existing, tmp_path):
    error = import_text(tmp_path, json.dumps({"mcpServers": {"!!!": GOOD}}))

    assert 'mcpServers["!!!"]: cannot make a server name from this key' in error
    assert snapshot() == existing


def test_a_missing_file_is_a_clear_error(db, tmp_path):
    with pytest.raises(CommandError, match="cannot read the file"):
        call_command("mcp_import", str(tmp_path / "nope.json"), stdout=io.StringIO())


def test_what_only_the_model_can_check_is_reported_the_same_way(existing, tmp_path):
    key = "A Very Long Server Name " * 10

    error = import_text(tmp_path, json.dumps({"mcpServers": {"fresh": GOOD, key: GOOD}}))

    assert (
        f'mcpServers["{key}"].display_name: Ensure this value has at most 200 characters' in error
    )
    assert snapshot() == existing


def test_a_preview_gets_the_sound_entries_beside_every_problem():
    text = json.dumps(
        {
            "mcpServers": {
                "good": {"command": "ok"},
                "bad": {"command": 7},
                "Twin": {"command": "a"},
                "twin": {"command": "b"},
            }
        }
    )

    parsed, errors = parse_mcp_json_entries(text, environ={})

    assert [server.name for server in parsed.servers] == ["good"]
    assert errors[0] == "mcpServers.bad.command: must be a string"
    assert "also the name of mcpServers.Twin" in errors[1] and len(errors) == 2
