"""The hub refuses to start insecurely, and reports its own health."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _check(env_overrides: dict[str, str], drop: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


def test_production_without_a_secret_key_fails_loudly():
    result = _check({"MCPHUB_DEBUG": "false", "MCPHUB_ENV_FILE": "/nonexistent"}, drop=("SECRET_KEY",))

    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


def test_production_without_an_encryption_key_fails_loudly():
    result = _check({"MCPHUB_DEBUG": "false", "MCPHUB_ENV_FILE": "/nonexistent"}, drop=("MCPHUB_ENCRYPTION_KEYS",))

    assert result.returncode != 0
    assert "MCPHUB_ENCRYPTION_KEYS is not set" in result.stderr


def test_a_dotenv_file_supplies_the_secrets(tmp_path):
    dotenv = tmp_path / ".env"
    dotenv.write_text("SECRET_KEY=from-dotenv\nMCPHUB_ENCRYPTION_KEYS=dGVzdC1vbmx5LWVuY3J5cHRpb24ta2V5LTMyYnl0ZXM=\n")

    result = _check(
        {"MCPHUB_DEBUG": "false", "MCPHUB_ENV_FILE": str(dotenv)}, drop=("SECRET_KEY", "MCPHUB_ENCRYPTION_KEYS")
    )

    assert result.returncode == 0, result.stderr


def test_health_reports_ok_when_dependencies_answer(client, db, settings):
    response = client.get("/health")

    assert response.status_code == 200
    assert response.json()["checks"]["database"] == "ok"
    if settings.REDIS_URL:
        assert response.json()["checks"]["redis"] == "ok"


def test_health_names_the_failing_dependency(client, db, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"

    response = client.get("/health")

    assert response.status_code == 503
    assert response.json()["checks"]["redis"].startswith("error")
