"""What the catalog guarantees about servers, whoever writes them."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from apps.catalog.models import McpServer, Tool


def test_changing_connection_config_changes_the_config_hash(db):
    server = McpServer.objects.create(name="fs", command="npx", args=["a"])
    before = server.config_hash

    server.args = ["b"]
    server.save(update_fields=["args"])

    assert McpServer.objects.get(pk=server.pk).config_hash != before


@pytest.mark.parametrize(
    "field,value",
    [("env", {"K": "v2"}), ("url", "http://127.0.0.1:9/mcp"), ("timeout", 5), ("cwd", "/tmp")],
)
def test_every_connection_field_feeds_the_hash(db, field, value):
    server = McpServer.objects.create(name="fs", command="npx", env={"K": "v"})
    before = server.config_hash

    setattr(server, field, value)
    server.save()

    assert server.config_hash != before


def test_cosmetic_changes_keep_the_hash(db):
    server = McpServer.objects.create(name="fs", command="npx")
    before = server.config_hash

    server.display_name = "Filesystem"
    server.description = "Files"
    server.save()

    assert server.config_hash == before


@pytest.mark.parametrize(
    "fields",
    [
        {"name": "no-command", "transport": "stdio", "command": ""},
        {"name": "no-url", "transport": "streamable_http", "url": ""},
        {"name": "zero-timeout", "command": "x", "timeout": 0},
    ],
)
def test_the_database_refuses_incoherent_servers(db, fields):
    with pytest.raises(IntegrityError), transaction.atomic():
        McpServer.objects.create(**fields)


def test_server_names_are_unique(db):
    McpServer.objects.create(name="fs", command="npx")
    with pytest.raises(IntegrityError), transaction.atomic():
        McpServer.objects.create(name="fs", command="other")


@pytest.mark.parametrize("name", ["Has Space", "UPPER", "dot.ted", "-lead", "x" * 41, ""])
def test_bad_server_names_are_refused_by_validation(db, name):
    with pytest.raises(ValidationError) as error:
        McpServer(name=name, command="npx").full_clean()
    assert "name" in error.value.message_dict


def test_validation_explains_what_is_missing(db, alice):
    server = McpServer(
        name="t", transport="sse", url="", visibility="team", args="not-a-list", env={"K": 1}
    )

    with pytest.raises(ValidationError) as error:
        server.full_clean()

    assert set(error.value.message_dict) >= {"url", "team", "args", "env"}


def test_a_tool_name_is_unique_within_its_server_only(db, make_tool):
    one = McpServer.objects.create(name="one", command="x")
    two = McpServer.objects.create(name="two", command="x")
    make_tool(one, "search")
    make_tool(two, "search")

    with pytest.raises(IntegrityError), transaction.atomic():
        make_tool(one, "search")
    assert Tool.objects.get(server=two, name="search").key == "two.search"
