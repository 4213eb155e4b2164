"""A run starts with the tools it was given, or not at all: its toolbox follows the endpoint's
committed change counter (not a view cached before the change), and a run whose named servers
yield no tool fails at once with a clear error instead of answering without them."""

from __future__ import annotations

import pytest

from apps.chat.runs.loop import execute, load_toolbox
from apps.chat.runs.models import Run
from apps.toolsets.models import EndpointTool
from apps.toolsets.services import disable_tools, enable_tools
from tests.chat.conftest import db

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]


def _run(owner, provider, endpoint, **fields) -> Run:
    return Run.objects.create(
        owner=owner, task="Use echo", provider=provider, endpoint=endpoint, **fields
    )


async def test_a_run_whose_named_servers_yield_no_tools_fails_at_start(
    alice, alice_provider, alice_endpoint, echo_server, llm
):
    run = await db(_run)(alice, alice_provider, alice_endpoint, servers=["echo"])
    await db(lambda: disable_tools(endpoint=alice_endpoint, tools=echo_server.tools.all()))()

    await execute(run.pk)

    run = await db(Run.objects.get)(pk=run.pk)
    assert run.status == "failed"
    assert run.error.startswith("No tools of echo are available to this run")
    assert run.rounds == 0 and llm.requests == []  # the model was never asked


async def test_the_toolbox_follows_a_change_committed_after_a_view_was_cached(
    alice, alice_provider, alice_endpoint, echo_server
):
    run = await db(_run)(alice, alice_provider, alice_endpoint, servers=["echo"])
    before = await load_toolbox(run)  # caches the endpoint's view at its current version
    await db(lambda: disable_tools(endpoint=alice_endpoint, tools=echo_server.tools.all()))()
    await db(
        lambda: enable_tools(endpoint=alice_endpoint, tools=echo_server.tools.filter(name="add"))
    )()

    after = await load_toolbox(run)

    assert "add" in before.view.tools and "echo" in before.view.tools
    assert set(after.view.tools) == {"add"}
    assert await db(lambda: EndpointTool.objects.filter(endpoint=alice_endpoint).count())() == 1
