"""In real Chromium: alice reads a day of her tool calls as charts, drills into a server, switches windows."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from apps.toolsets.models import ToolCall

pytestmark = pytest.mark.django_db(transaction=True)

# (server, tool, calls per hour, typical ms, error share)
TRAFFIC = [
    ("github", "search_issues", 6, 180, 0.03),
    ("github", "create_pull_request", 1, 650, 0.15),
    ("time", "now", 9, 3, 0.0),
    ("fetch", "get", 4, 420, 0.08),
]


@pytest.fixture
def a_week_of_calls(alice):
    """A busy working day (and a quieter week before it), the same on every run."""
    rng = random.Random(5)
    endpoint, now, rows = alice.endpoints.get(), timezone.now(), []
    for hour in range(24 * 8):
        busy = 1.0 if 8 <= (now - timedelta(hours=hour)).hour <= 18 else 0.3
        for server, tool, per_hour, ms, errors in TRAFFIC:
            for _ in range(rng.randint(0, round(per_hour * busy * 2))):
                ok = rng.random() >= errors
                rows.append(
                    ToolCall(
                        user=alice,
                        endpoint=endpoint,
                        server_name=server,
                        tool_name=tool,
                        exposed_name=tool,
                        started_at=now - timedelta(hours=hour, minutes=rng.uniform(0, 59)),
                        duration_ms=ms * rng.lognormvariate(0, 0.5),
                        ok=ok,
                        error="" if ok else "upstream timeout",
                    )
                )
    ToolCall.objects.bulk_create(rows)
    return rows


def test_alice_reads_her_usage_and_drills_into_a_server(
    sign_in, screenshot, alice, a_week_of_calls
):
    last_day = [
        c
        for c in a_week_of_calls
        if c.started_at >= timezone.now() - timedelta(hours=23, minutes=50)
    ]
    page = sign_in("alice", "alice-password")

    page.get_by_role("link", name="Usage").click()
    calls = int(page.locator("#total-calls").inner_text())
    assert len(last_day) - 30 <= calls <= len(last_day) + 30  # the first bucket starts on the hour
    expect(page.locator("#chart-calls .col")).to_have_count(24)
    expect(page.locator("#chart-durations polyline").first).to_be_visible()
    expect(page.locator("#usage-servers tbody tr")).to_have_count(3)
    screenshot(page, "usage")

    page.locator("#usage-servers").get_by_role("link", name="github").click()
    expect(page.locator(".chip")).to_contain_text("server github")
    expect(page.locator("#usage-tools tbody tr")).to_have_count(2)

    page.get_by_role("link", name="Last 7 days").click()
    expect(page.locator("#chart-calls .col")).to_have_count(7)
    since = (timezone.localtime() - timedelta(days=6)).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    github_week = sum(
        1 for c in a_week_of_calls if c.server_name == "github" and c.started_at >= since
    )
    expect(page.locator("#total-calls")).to_have_text(str(github_week))
    screenshot(page, "usage-github-7d")


def test_usage_fits_a_phone(sign_in, screenshot, alice, a_week_of_calls):
    page = sign_in("alice", "alice-password", width=390)
    page.goto("/usage/")
    screenshot(page, "usage-phone")

    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
