"""An operator scrapes `/metrics` from a running hub: the calls alice made are counted; others are refused."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from asgiref.sync import sync_to_async

from apps.accounts.services import create_access_token
from tests.live_hub import mcp_client, metric, scrape_metrics

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def test_a_scrape_under_load_counts_the_calls_made(
    hub, alice_endpoint, alice_hub_token, scrape_token
):
    before = await scrape_metrics(hub, scrape_token)
    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        load = asyncio.gather(*(client.call_tool("add", {"a": n, "b": 1}) for n in range(20)))
        during = await scrape_metrics(hub, scrape_token)
        results = await load
        failed = await client.call_tool("add", {"a": "not a number", "b": 1})
        after = await scrape_metrics(hub, scrape_token)

    assert [r.structured_content["result"] for r in results] == [n + 1 for n in range(20)]
    assert failed.is_error
    add = {"server": "echo", "tool": "add"}
    delta = {
        name: metric(after, name, **add) - metric(before, name, **add)
        for name in (
            "mcphub_tool_calls_total",
            "mcphub_tool_call_errors_total",
            "mcphub_tool_call_duration_seconds_count",
        )
    }
    assert delta == {
        "mcphub_tool_calls_total": 21,
        "mcphub_tool_call_errors_total": 1,
        "mcphub_tool_call_duration_seconds_count": 21,
    }
    assert (
        0
        <= metric(during, "mcphub_tool_calls_total", **add)
        - metric(before, "mcphub_tool_calls_total", **add)
        <= 20
    )
    assert metric(after, "mcphub_tool_call_duration_seconds_bucket", le="+Inf", **add) == metric(
        after, "mcphub_tool_calls_total", **add
    )
    assert metric(during, "mcphub_mcp_sessions_open") >= 1
    assert metric(after, "mcphub_pool_up") == 1
    assert metric(after, "mcphub_pool_workers") == 1
    assert metric(after, "mcphub_pool_sessions", server="echo") >= 1
    assert metric(after, "mcphub_pool_breaker_state", server="echo", state="closed") == 1


async def test_only_staff_may_scrape(hub, charlie, dave):
    charlie_api_token = (
        await sync_to_async(create_access_token)(user=charlie, name="curious", scope="api_read")
    )[1]
    dave_mcp_token = (
        await sync_to_async(create_access_token)(user=dave, name="an MCP client", scope="mcp")
    )[1]
    async with httpx2.AsyncClient(timeout=30) as http:
        anonymous = await http.get(hub.url("/metrics"))
        not_staff = await http.get(
            hub.url("/metrics"), headers={"Authorization": f"Bearer {charlie_api_token}"}
        )
        mcp_only = await http.get(
            hub.url("/metrics"), headers={"Authorization": f"Bearer {dave_mcp_token}"}
        )
        forged = await http.get(
            hub.url("/metrics"), headers={"Authorization": "Bearer mcphub_forged"}
        )

    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"].startswith("Bearer")
    assert not_staff.status_code == 403
    assert mcp_only.status_code == 401
    assert forged.status_code == 401
    assert "mcphub_tool_calls" not in anonymous.text + not_staff.text + mcp_only.text + forged.text
