"""Usage: alice sees her endpoints' calls counted right; bob and charlie see none of them; staff see all."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from apps.toolsets.calllog import selectors
from apps.toolsets.models import ToolCall


def log_call(
    user, endpoint, server: str, tool: str, *, ago: timedelta, ms: float, ok: bool = True
) -> ToolCall:
    return ToolCall.objects.create(
        user=user,
        endpoint=endpoint,
        server_name=server,
        tool_name=tool,
        exposed_name=f"{server}__{tool}",
        started_at=timezone.now() - ago,
        duration_ms=ms,
        ok=ok,
        error="" if ok else "backend said no",
    )


@pytest.fixture
def alice_calls(alice, alice_endpoint):
    """Alice's last day: time.now 4 calls (10-40 ms, one error), time.convert 1 call; one call 3 days ago."""
    for ms, ok in [(10, True), (20, True), (30, False), (40, True)]:
        log_call(alice, alice_endpoint, "time", "now", ago=timedelta(minutes=ms), ms=ms, ok=ok)
    log_call(alice, alice_endpoint, "time", "convert", ago=timedelta(hours=5), ms=100)
    log_call(alice, alice_endpoint, "github", "search", ago=timedelta(days=3), ms=500)


@pytest.fixture
def charlie_calls(charlie):
    log_call(charlie, charlie.endpoints.get(), "fetch", "get", ago=timedelta(minutes=5), ms=7)


def test_alice_sees_counts_error_rate_and_percentiles_of_her_last_day(as_alice, alice_calls):
    body = as_alice.get("/api/usage/").json()

    assert body["window"] == "24h" and body["bucket"] == "hour"
    assert body["totals"]["calls"] == 5 and body["totals"]["errors"] == 1
    assert body["totals"]["error_rate"] == pytest.approx(0.2)
    now = next(t for t in body["tools"] if t["tool"] == "now")
    assert (now["server"], now["calls"], now["errors"], now["error_rate"]) == ("time", 4, 1, 0.25)
    # Linear interpolation over 10, 20, 30, 40 (Postgres percentile_cont gives the same).
    assert now["p50_ms"] == pytest.approx(25.0) and now["p95_ms"] == pytest.approx(38.5)
    assert [(s["server"], s["calls"]) for s in body["servers"]] == [("time", 5)]
    assert body["servers"][0]["p50_ms"] == pytest.approx(30.0)


def test_the_series_has_one_bucket_per_hour_and_sums_to_the_totals(as_alice, alice_calls):
    body = as_alice.get("/api/usage/").json()

    assert len(body["buckets"]) == 24
    assert sum(b["calls"] for b in body["buckets"]) == 5
    assert sum(body["tools"][0]["series"]) == body["tools"][0]["calls"]
    starts = [datetime.fromisoformat(b["start"]) for b in body["buckets"]]
    assert all(
        later - earlier == timedelta(hours=1)
        for earlier, later in zip(starts, starts[1:], strict=False)
    )


def test_a_longer_window_reaches_older_calls_by_day(as_alice, alice_calls):
    body = as_alice.get("/api/usage/?window=7d").json()

    assert body["bucket"] == "day" and len(body["buckets"]) == 7
    assert body["totals"]["calls"] == 6
    assert [s["server"] for s in body["servers"]] == ["time", "github"]


def test_usage_narrows_to_one_server_or_tool(as_alice, alice_calls):
    assert as_alice.get("/api/usage/?window=7d&server=github").json()["totals"]["calls"] == 1
    body = as_alice.get("/api/usage/?tool=convert").json()
    assert [(t["server"], t["tool"], t["calls"]) for t in body["tools"]] == [("time", "convert", 1)]


def test_without_calls_the_numbers_are_zero_not_errors(as_alice, alice_endpoint):
    body = as_alice.get("/api/usage/?window=30d").json()

    assert body["totals"] == {
        "calls": 0,
        "errors": 0,
        "error_rate": 0.0,
        "p50_ms": None,
        "p95_ms": None,
    }
    assert len(body["buckets"]) == 30 and body["servers"] == [] and body["tools"] == []


def test_bob_on_alices_team_and_charlie_see_none_of_her_calls(
    as_bob, as_charlie, team, alice_calls, charlie_calls
):
    assert as_bob.get("/api/usage/").json()["totals"]["calls"] == 0
    charlie_sees = as_charlie.get("/api/usage/").json()
    assert [(t["server"], t["tool"]) for t in charlie_sees["tools"]] == [("fetch", "get")]


def test_charlie_cannot_ask_for_alices_usage(as_charlie, alice_calls):
    response = as_charlie.get("/api/usage/?user=alice")

    assert response.status_code == 403
    assert (
        as_charlie.get("/api/usage/?endpoint=" + ToolCall.objects.first().endpoint.slug).json()[
            "totals"
        ]["calls"]
        == 0
    )


def test_anonymous_gets_401(anonymous, alice_calls):
    assert anonymous.get("/api/usage/").status_code == 401


def test_staff_see_everyones_calls_and_can_pick_one_user(as_admin, alice_calls, charlie_calls):
    assert as_admin.get("/api/usage/").json()["totals"]["calls"] == 6
    assert as_admin.get("/api/usage/?user=charlie").json()["totals"]["calls"] == 1
    assert as_admin.get("/api/usage/?user=alice").json()["totals"]["calls"] == 5


def test_alice_keeps_the_history_of_an_endpoint_she_deleted(as_alice, alice):
    extra = alice.endpoints.create(name="Old", slug="alice-old")
    log_call(alice, extra, "time", "now", ago=timedelta(minutes=1), ms=5)
    extra.delete()

    assert as_alice.get("/api/usage/").json()["totals"]["calls"] == 1


@pytest.mark.parametrize("query", ["window=1y", "bucket=week", "server=" + "x" * 41])
def test_bad_usage_queries_get_a_field_error(as_alice, query):
    response = as_alice.get(f"/api/usage/?{query}")

    assert response.status_code == 400
    assert query.split("=")[0] in response.json()


def test_calls_land_in_the_bucket_of_their_hour(alice, alice_endpoint, settings):
    settings.TIME_ZONE = "UTC"
    now = datetime(2025, 3, 10, 12, 30, tzinfo=UTC)
    for started, ms in [
        (now - timedelta(minutes=20), 5),
        (now - timedelta(minutes=50), 15),
        (now - timedelta(hours=23), 9),
    ]:
        ToolCall.objects.create(
            user=alice,
            endpoint=alice_endpoint,
            server_name="time",
            tool_name="now",
            exposed_name="now",
            started_at=started,
            duration_ms=ms,
            ok=True,
        )

    result = selectors.usage(alice, selectors.UsageFilter(), now=now)

    assert result.buckets[0].start == datetime(2025, 3, 9, 13, tzinfo=UTC)
    assert [(b.start.hour, b.calls) for b in result.buckets if b.calls] == [
        (13, 1),
        (11, 1),
        (12, 1),
    ]
    assert result.buckets[-1].p50_ms == 5


def test_percentiles_sample_evenly_beyond_the_bound(alice, alice_endpoint, monkeypatch):
    monkeypatch.setattr(selectors, "MAX_DURATIONS", 10)
    ToolCall.objects.bulk_create(
        [
            ToolCall(
                user=alice,
                endpoint=alice_endpoint,
                server_name="time",
                tool_name="now",
                exposed_name="now",
                started_at=timezone.now() - timedelta(minutes=1),
                duration_ms=ms,
                ok=True,
            )
            for ms in range(1, 41)
        ]
    )

    result = selectors.usage(alice, selectors.UsageFilter())

    assert result.sampled and result.totals.calls == 40
    assert 10 <= result.totals.p50_ms <= 30


def test_percentile_interpolates_like_percentile_cont():
    assert selectors.percentile([], 0.5) is None
    assert selectors.percentile([7.0], 0.95) == 7.0
    assert selectors.percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.95) == pytest.approx(4.8)


@pytest.mark.parametrize(
    ("zone", "window"),
    [("America/New_York", "24h"), ("America/New_York", "7d"), ("Asia/Kolkata", "24h")],
)
def test_buckets_follow_the_hub_time_zone_across_a_dst_change(
    alice, alice_endpoint, settings, zone, window
):
    settings.TIME_ZONE = zone
    now = datetime(2025, 3, 9, 12, 0, tzinfo=UTC)  # New York moved its clocks at 07:00 UTC that day
    ToolCall.objects.bulk_create(
        [
            ToolCall(
                user=alice,
                endpoint=alice_endpoint,
                server_name="time",
                tool_name="now",
                exposed_name="now",
                started_at=now - timedelta(minutes=37 * i),
                duration_ms=i,
                ok=True,
            )
            for i in range(38)
        ]
    )

    with timezone.override(zone):
        result = selectors.usage(alice, selectors.UsageFilter(window=window), now=now)

    assert result.totals.calls == 38
    assert sum(b.calls for b in result.buckets) == 38
    assert len(result.buckets) == (24 if window == "24h" else 7)
