"""The hub's own tools and healing runs: an MCP client resumes a failed run with `resume_run`, and a
waiting `autonomous_with_mcp` call keeps waiting while its run moves to a live worker (its own was
SIGKILLed), answering with the run's final answer."""

from __future__ import annotations

import asyncio

import pytest
from django.conf import settings

from apps.chat.runs.models import Run
from tests.chat.conftest import db
from tests.chat.healing import ROUNDS, Counter, start_cluster, worker_name, workers_ready
from tests.live_hub import mcp_client
from tests.llm_server import Reply
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]


async def test_resume_run_continues_a_failed_run_and_answers(
    hub, llm, alice, alice_provider, alice_endpoint, hub_tools, alice_hub_token
):
    run = await db(
        lambda: Run.objects.create(
            owner=alice,
            task="Add 1 and 2",
            provider=alice_provider,
            endpoint=alice_endpoint,
            servers=["echo"],
            status=Run.Status.FAILED,
            error="The model provider failed: connection refused",
        )
    )()
    llm.script([Reply(tool_calls=[("c1", "add", {"a": 1, "b": 2})]), Reply(text=["It is 3"])])
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        unknown = await client.call_tool("resume_run", {"run_id": "not-a-run"})
        result = await client.call_tool("resume_run", {"run_id": str(run.pk)})
        again = await client.call_tool("resume_run", {"run_id": str(run.pk)})

    assert unknown.is_error and "No run" in unknown.content[0].text
    assert result.is_error is False, result.content[0].text
    assert result.content[0].text == "It is 3"
    assert result.structured_content["status"] == "succeeded"
    assert (
        again.is_error and "only an interrupted, failed or incomplete run" in again.content[0].text
    )


@pytest.mark.slow
@pytest.mark.skipif(
    not settings.REDIS_URL, reason="Celery workers to kill need the production shape"
)
async def test_a_waiting_autonomous_call_answers_after_its_run_moved_to_a_live_worker(
    tmp_path, llm, alice_provider, alice_endpoint, hub_tools, alice_hub_token
):
    llm.responder = Counter()
    cluster = start_cluster(tmp_path, workers=2)
    try:
        await workers_ready(cluster, 2)
        async with mcp_client(cluster.hub.url(alice_endpoint.path), alice_hub_token) as client:
            call = asyncio.create_task(
                client.call_tool(
                    "autonomous_with_mcp", {"mcp_name": "echo", "task": "Count slowly for me"}
                )
            )
            run = await eventually_async(
                db(lambda: Run.objects.filter(task="Count slowly for me", rounds__gte=2).first()),
                timeout=60,
                what="the run's second round",
            )
            victim = next(w for w in cluster.workers if worker_name(w) == run.worker)
            cluster.kill(victim)
            result = await asyncio.wait_for(call, 90)
    finally:
        cluster.stop()

    assert result.is_error is False, result.content[0].text
    assert result.content[0].text == f"Counted to {ROUNDS}"
    assert result.structured_content["rounds"] == ROUNDS + 1
