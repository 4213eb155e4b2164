"""Entry keys become server names: valid ones as they are, others normalized the same way every time."""

from __future__ import annotations

import pytest

from apps.catalog import mcp_json
from apps.catalog.models import SERVER_NAME_RE


def test_the_parser_uses_the_models_name_rule():
    assert mcp_json.SERVER_NAME_RE == SERVER_NAME_RE


@pytest.mark.parametrize(
    "key,name",
    [
        ("github", "github"),
        ("my_server-2", "my_server-2"),
        ("GitHub", "github"),
        ("Brave Search", "brave-search"),
        ("@modelcontextprotocol/server-filesystem", "modelcontextprotocol-server-filesystem"),
        ("Café Menu", "cafe-menu"),
        ("My Server (prod)", "my-server-prod"),
        ("_private", "private"),
        ("a" * 50, "a" * 40),
        ("x" * 39 + " y", "x" * 39),
        ("日本語", ""),
    ],
)
def test_normalized_names(key, name):
    assert mcp_json.normalize_server_name(key) == name


@pytest.mark.parametrize(
    "value,expanded",
    [
        ("${HOME_DIR}/bin", "/home/alice/bin"),
        ("${env:HOME_DIR}", "/home/alice"),
        ("${MISSING:-fallback}", "fallback"),
        ("${EMPTY:-fallback}", "fallback"),
        ("${EMPTY}", ""),
        ("${env:MISSING:-x}-${HOME_DIR}", "x-/home/alice"),
        ("no variables, $HOME_DIR stays", "no variables, $HOME_DIR stays"),
    ],
)
def test_variable_expansion(value, expanded):
    environ = {"HOME_DIR": "/home/alice", "EMPTY": ""}

    assert mcp_json.expand_variables(value, environ) == (expanded, [])


def test_a_parsed_config_is_frozen():
    parsed = mcp_json.parse_mcp_json('{"mcpServers": {"t": {"command": "x"}}}', environ={})

    with pytest.raises(AttributeError):
        parsed.servers[0].command = "rm"  # type: ignore[misc]
    with pytest.raises(TypeError):
        parsed.servers[0].env["LD_PRELOAD"] = "evil.so"  # type: ignore[index]
