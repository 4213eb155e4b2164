"""A run whose worker stopped beating (SIGKILL, crash) is found and left resumable."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from apps.chat import tasks
from apps.chat.runs.models import Run
from apps.chat.runs.services import sweep_lost_runs


def test_task_names_are_stable_and_beat_sweeps_lost_runs():
    assert tasks.execute_run.name == "chat.execute_run"
    assert tasks.sweep_lost_runs.name == "chat.sweep_lost_runs"
    beat = {entry["task"]: entry["schedule"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    # Marked interrupted within a minute of the last heartbeat: stale after N s, swept every few.
    assert settings.MCPHUB_RUN_STALE_SECONDS + beat["chat.sweep_lost_runs"] <= 60


@pytest.mark.django_db
def test_only_silent_running_runs_become_interrupted(alice):
    old = timezone.now() - timedelta(seconds=settings.MCPHUB_RUN_STALE_SECONDS + 5)
    lost = Run.objects.create(owner=alice, task="lost", status=Run.Status.RUNNING, heartbeat_at=old)
    alive = Run.objects.create(owner=alice, task="alive", status=Run.Status.RUNNING, heartbeat_at=timezone.now())
    done = Run.objects.create(owner=alice, task="done", status=Run.Status.SUCCEEDED, heartbeat_at=old)

    assert sweep_lost_runs() == 1
    statuses = {r.task: r.status for r in Run.objects.all()}
    assert statuses == {"lost": "interrupted", "alive": "running", "done": "succeeded"}
    lost.refresh_from_db()
    assert "resume" in lost.error
