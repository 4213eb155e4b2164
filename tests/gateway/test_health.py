"""The running hub reports itself healthy, counting its pool workers when it has Redis."""

from __future__ import annotations

import httpx2
import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_running_hub_is_healthy_and_counts_its_pool_worker(hub):
    response = httpx2.get(hub.url("/health"), timeout=10)

    assert response.status_code == 200, response.text
    checks = response.json()["checks"]
    if settings.REDIS_URL:
        assert checks == {"database": "ok", "redis": "ok", "workers": "ok"}
        assert response.json()["workers"] >= 1
    else:
        assert checks == {"database": "ok"}
