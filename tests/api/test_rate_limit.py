"""The REST API's rate limit (MCPHUB_API_RATE) counts every request of a token, also those that
arrive together, and tells a refused client when to come back."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.conf import settings

from apps.api.throttling import TokenRateThrottle
from apps.core import hotstate
from tests.api.conftest import _client_for


@pytest.fixture
def three_an_hour(monkeypatch):
    monkeypatch.setattr(TokenRateThrottle, "rate", "3/hour", raising=False)


def test_a_token_over_its_rate_is_refused_with_when_to_retry_and_others_go_on(
    three_an_hour, alice, as_alice
):
    assert [as_alice.get("/api/endpoints/").status_code for _ in range(3)] == [200, 200, 200]

    refused = as_alice.get("/api/endpoints/")

    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 3600
    assert (
        _client_for(alice).get("/api/endpoints/").status_code == 200
    )  # another token: its own count


def test_requests_arriving_together_are_each_counted():
    key = f"test:{uuid.uuid4().hex}"
    counts: list[int] = []

    def hammer() -> None:
        for _ in range(50):
            counts.append(hotstate.count_in_window(key, 3600)[0])

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(counts) == list(range(1, 401))  # every request its own number: none lost
    if settings.REDIS_URL:  # the window's counter expires with the window
        number, _ = hotstate.window(3600)
        assert 3600 < hotstate.sync_redis().ttl(f"{key}:{number}") <= 3601
