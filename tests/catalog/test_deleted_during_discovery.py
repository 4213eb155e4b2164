"""A server deleted while its discovery ran (an admin removing it, a script's cleanup) is no failure:
the outcome says so, nothing is written and nothing raises (the worker logged an IntegrityError
traceback at COMMIT: the new tools pointed at a server that was gone)."""

import pytest
from mcp import types

from apps.catalog import operations
from apps.catalog.models import McpServer, Tool
from apps.connections.listing import Discovery

pytestmark = pytest.mark.django_db


def _discovery() -> Discovery:
    tool = types.Tool(name="echo", description="Echo.", inputSchema={"type": "object"})
    return Discovery(
        server="gone",
        config_hash="x",
        protocol_version="2025-06-18",
        server_info=None,
        capabilities=None,
        instructions=None,
        tools=[tool],
    )


def test_the_outcome_says_it_was_deleted_and_nothing_is_written():
    server = McpServer.objects.create(name="gone", command="true")
    McpServer.objects.filter(
        pk=server.pk
    ).delete()  # the row is gone; the task still holds `server`

    outcome = operations._outcome(server, _discovery())

    assert not outcome.ok
    assert "deleted while it was being discovered" in str(outcome)
    assert not Tool.objects.filter(name="echo").exists()


def test_a_server_still_there_gets_its_tools():
    server = McpServer.objects.create(name="kept", command="true")

    outcome = operations._outcome(server, _discovery())

    assert outcome.ok
    assert list(server.tools.values_list("name", flat=True)) == ["echo"]
