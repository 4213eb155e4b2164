"""The hub refuses to start insecurely, and reports its own health."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings

ROOT = Path(__file__).resolve().parents[2]


def _check(
    env_overrides: dict[str, str], drop: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_production_without_a_secret_key_fails_loudly():
    result = _check(
        {"MCPHUB_DEBUG": "false", "MCPHUB_ENV_FILE": "/nonexistent"}, drop=("SECRET_KEY",)
    )

    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


def test_production_without_an_encryption_key_fails_loudly():
    result = _check(
        {"MCPHUB_DEBUG": "false", "MCPHUB_ENV_FILE": "/nonexistent"},
        drop=("MCPHUB_ENCRYPTION_KEYS",),
    )

    assert result.returncode != 0
    assert "MCPHUB_ENCRYPTION_KEYS is not set" in result.stderr


def test_a_dotenv_file_supplies_the_secrets(tmp_path):
    dotenv = tmp_path / ".env"
    dotenv.write_text(
        "SECRET_KEY=from-dotenv\nMCPHUB_ENCRYPTION_KEYS=dGVzdC1vbmx5LWVuY3J5cHRpb24ta2V5LTMyYnl0ZXM=\n"
    )

    result = _check(
        {"MCPHUB_DEBUG": "false", "MCPHUB_ENV_FILE": str(dotenv)},
        drop=("SECRET_KEY", "MCPHUB_ENCRYPTION_KEYS"),
    )

    assert result.returncode == 0, result.stderr


@pytest.fixture
def pool_prefix(settings) -> str:
    """A Redis prefix of this test's own, so workers of other test runs on the same Redis never count."""
    prefix = f"test-health:{uuid.uuid4().hex[:8]}"
    settings.MCPHUB_POOL = {**(getattr(settings, "MCPHUB_POOL", {}) or {}), "redis_prefix": prefix}
    return prefix


@pytest.fixture
def pool_worker(settings, pool_prefix):
    """A real pool worker (the one Celery workers run) registered under the test's prefix."""
    from apps.connections.celery_hooks import PoolWorkerThread

    worker = PoolWorkerThread(settings.REDIS_URL, {"redis_prefix": pool_prefix})
    worker.start()
    yield worker
    worker.stop()


needs_redis = pytest.mark.skipif(
    not django_settings.REDIS_URL, reason="pool workers exist only with REDIS_URL"
)


@pytest.mark.skipif(bool(django_settings.REDIS_URL), reason="embedded mode only")
def test_embedded_health_checks_the_database_and_counts_no_workers(client, db):
    response = client.get("/health")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok"}}


@needs_redis
def test_health_is_ok_with_a_live_pool_worker(client, db, pool_worker):
    response = client.get("/health")

    assert response.status_code == 200, response.json()
    assert response.json()["checks"] == {"database": "ok", "redis": "ok", "workers": "ok"}
    assert response.json()["workers"] == 1


@needs_redis
def test_health_is_503_without_a_pool_worker(client, db, pool_prefix):
    response = client.get("/health")

    assert response.status_code == 503
    assert response.json()["checks"]["redis"] == "ok"
    assert response.json()["checks"]["workers"] == "error: no pool workers running"


@needs_redis
def test_health_turns_503_when_the_last_worker_stops(client, db, pool_worker):
    assert client.get("/health").status_code == 200

    pool_worker.stop()

    response = client.get("/health")
    assert response.status_code == 503
    assert "workers" not in response.json()


@needs_redis
def test_a_worker_whose_heartbeat_went_stale_does_not_count(client, db, settings, pool_prefix):
    import redis

    from apps.connections.worker import WORKER_TTL_SECONDS, workers_key

    stale = redis.Redis.from_url(settings.REDIS_URL)
    stale.zadd(workers_key(pool_prefix), {"crashed-worker": time.time() - WORKER_TTL_SECONDS - 1})
    try:
        response = client.get("/health")
    finally:
        stale.delete(workers_key(pool_prefix))
        stale.close()

    assert response.status_code == 503
    assert response.json()["checks"]["workers"] == "error: no pool workers running"


def test_health_names_the_failing_dependency(client, db, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"

    response = client.get("/health")

    assert response.status_code == 503
    assert response.json()["checks"]["redis"].startswith("error")
    assert response.json()["checks"]["workers"].startswith("error")
