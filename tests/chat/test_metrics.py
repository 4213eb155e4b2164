"""An operator's `/metrics` counts alice's chat turns and the tool calls her model made."""

from __future__ import annotations

import pytest
from django.conf import settings

from tests.chat.conftest import Api, chat_socket
from tests.live_hub import metric, scrape_metrics
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]

# Production: a web process hands a turn or a run to a worker on its direct link, not by Celery.
WAY = "link" if settings.REDIS_URL else "celery"


def _handed_over(before: dict, after: dict, task: str) -> dict[str, float]:
    name = "mcphub_work_handed_over_total"
    return {
        way: metric(after, name, task=task, way=way) - metric(before, name, task=task, way=way)
        for way in ("link", "celery")
    }


async def test_chat_turns_and_their_tool_calls_are_counted(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token, scrape_token
):
    llm.script([Reply(tool_calls=[("c1", "echo", {"text": "hi"})]), Reply(text=["It said hi"])])
    before = await scrape_metrics(hub, scrape_token)
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "Echo hi"})
            end = await chat.until("end")
    after = await scrape_metrics(hub, scrape_token)

    assert end["payload"]["status"] == "complete"
    assert (
        metric(after, "mcphub_chat_turns_total", status="complete")
        - metric(before, "mcphub_chat_turns_total", status="complete")
        == 1
    )
    assert _handed_over(before, after, "chat.run_turn") == {"link": 0, "celery": 0, WAY: 1}
    echo = {"server": "echo", "tool": "echo"}
    assert (
        metric(after, "mcphub_tool_calls_total", **echo)
        - metric(before, "mcphub_tool_calls_total", **echo)
        == 1
    )


async def test_runs_are_counted_by_how_they_ended(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token, scrape_token
):
    from tests.chat.runs.conftest import start_run, wait_run

    llm.script([Reply(tool_calls=[("c1", "add", {"a": 1, "b": 1})]), Reply(text=["2"])])
    before = await scrape_metrics(hub, scrape_token)
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Add one and one", servers=["echo"])
        done = await wait_run(api, run["id"])
    after = await scrape_metrics(hub, scrape_token)

    assert done["status"] == "succeeded", done["error"]
    assert (
        metric(after, "mcphub_runs_total", status="succeeded")
        - metric(before, "mcphub_runs_total", status="succeeded")
        == 1
    )
    assert _handed_over(before, after, "chat.execute_run") == {"link": 0, "celery": 0, WAY: 1}
    add = {"server": "echo", "tool": "add"}
    assert (
        metric(after, "mcphub_tool_calls_total", **add)
        - metric(before, "mcphub_tool_calls_total", **add)
        == 1
    )
