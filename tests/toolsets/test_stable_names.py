"""A tool keeps the name clients first saw it under, whatever is added later and in either mode;
only its owner renames it (an override, or another naming strategy)."""

from __future__ import annotations

import pytest

from apps.catalog.models import McpServer
from apps.discovery import catalog as dynamic_catalog
from apps.toolsets import exposure
from apps.toolsets.models import Endpoint
from apps.toolsets.naming import Candidate, assign
from apps.toolsets.services import enable_tools, update_endpoint

pytestmark = pytest.mark.django_db


def static_names(endpoint: Endpoint) -> dict[str, str]:
    view = exposure.build(endpoint.pk, object(), page_size=1000)
    return {name: f"{e.server}.{e.backend_name}" for name, e in view.tools.items()}


def dynamic_names(endpoint: Endpoint) -> dict[str, str]:
    catalog = dynamic_catalog.build(endpoint.pk, object())
    return {name: entry.key for name, entry in catalog.entries.items()}


@pytest.fixture
def everything(make_tool):
    server = McpServer.objects.create(name="everything", command="npx")
    return make_tool(server, "echo")


@pytest.fixture
def other_echo(make_tool):
    """A later, unrelated server with a tool of the same name."""
    server = McpServer.objects.create(name="other", command="npx")
    return make_tool(server, "echo")


def test_a_newcomer_with_the_same_name_is_the_one_prefixed(alice, everything, other_echo):
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=[everything])
    assert static_names(endpoint) == {"echo": "everything.echo"}  # first exposed as "echo"

    enable_tools(endpoint=endpoint, tools=[other_echo])

    assert static_names(endpoint) == {"echo": "everything.echo", "other__echo": "other.echo"}


def test_the_name_survives_switching_to_dynamic_beside_others_servers(
    alice, everything, other_echo
):
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=[everything])
    static_names(endpoint)

    update_endpoint(endpoint=endpoint, mode="dynamic")

    names = dynamic_names(endpoint)
    assert names["echo"] == "everything.echo" and names["other__echo"] == "other.echo"


def test_the_owner_changing_the_strategy_renames_everything(alice, everything, other_echo):
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=[everything, other_echo])
    update_endpoint(endpoint=endpoint, naming_strategy="hybrid")  # unchanged: names kept
    static_names(endpoint)

    update_endpoint(endpoint=endpoint, naming_strategy="prefixed")

    assert set(static_names(endpoint)) == {"everything__echo", "other__echo"}


def test_an_override_wins_over_a_kept_name():
    names = assign(
        [Candidate("a", "echo", fixed="echo"), Candidate("b", "say", override="echo")], "hybrid"
    )

    assert names == ["a__echo", "echo"]


def test_two_newcomers_that_clash_are_both_prefixed_and_the_kept_one_stays():
    names = assign(
        [Candidate("a", "echo", fixed="echo"), Candidate("b", "echo"), Candidate("c", "echo")],
        "hybrid",
    )

    assert names == ["echo", "b__echo", "c__echo"]
