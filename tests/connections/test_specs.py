"""A spec's config_hash changes exactly when a reconnect is needed, and never shows secrets."""

import pytest

from apps.connections.specs import ServerSpec

BASE = ServerSpec(
    "files", command="npx", args=("server-filesystem", "/srv"), env={"TOKEN": "s3cret"}, timeout=10
)


@pytest.mark.parametrize(
    "changed",
    [
        ServerSpec(
            "files", command="npx", args=("server-filesystem", "/tmp"), env={"TOKEN": "s3cret"}
        ),
        ServerSpec(
            "files", command="npx", args=("server-filesystem", "/srv"), env={"TOKEN": "rotated"}
        ),
        ServerSpec(
            "files", command="node", args=("server-filesystem", "/srv"), env={"TOKEN": "s3cret"}
        ),
        ServerSpec(
            "files",
            command="npx",
            args=("server-filesystem", "/srv"),
            env={"TOKEN": "s3cret"},
            cwd="/x",
        ),
    ],
)
def test_connection_changes_change_the_hash(changed):
    assert changed.config_hash != BASE.config_hash


def test_timeout_and_env_order_do_not_change_the_hash():
    same = ServerSpec(
        "files",
        command="npx",
        args=["server-filesystem", "/srv"],
        env={"TOKEN": "s3cret"},
        timeout=99,
    )
    assert same.config_hash == BASE.config_hash


def test_http_url_and_headers_change_the_hash():
    a = ServerSpec(
        "api",
        transport="streamable_http",
        url="http://a/mcp",
        headers={"Authorization": "Bearer 1"},
    )
    b = ServerSpec(
        "api",
        transport="streamable_http",
        url="http://a/mcp",
        headers={"Authorization": "Bearer 2"},
    )
    c = ServerSpec(
        "api",
        transport="streamable_http",
        url="http://b/mcp",
        headers={"Authorization": "Bearer 1"},
    )
    assert len({a.config_hash, b.config_hash, c.config_hash}) == 3


def test_repr_hides_secrets_and_wire_round_trips():
    assert "s3cret" not in repr(BASE)
    assert ServerSpec.from_wire(BASE.to_wire()) == BASE


@pytest.mark.parametrize(
    "fields",
    [{"transport": "stdio"}, {"transport": "sse"}, {"transport": "carrier-pigeon", "command": "x"}],
)
def test_incomplete_specs_are_refused(fields):
    with pytest.raises(ValueError):
        ServerSpec("bad", **fields)
