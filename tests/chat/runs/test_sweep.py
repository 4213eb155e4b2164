"""A run whose worker was lost and that no live worker took over (apps.chat.lease does within
seconds) is found and left resumable; a queued run whose hand-off was lost is handed over again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from apps.chat import lease, tasks
from apps.chat.runs.models import Run
from apps.chat.runs.services import ORPHANED_AFTER, sweep_lost_runs


def test_task_names_are_stable_and_beat_sweeps_lost_runs():
    assert tasks.execute_run.name == "chat.execute_run"
    assert tasks.sweep_lost_runs.name == "chat.sweep_lost_runs"
    beat = {entry["task"]: entry["schedule"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert beat["chat.sweep_lost_runs"] <= 60
    # A live worker takes a lost one's run over long before the sweep would call it orphaned.
    assert settings.MCPHUB_RUN_STALE_SECONDS + settings.MCPHUB_RUN_HEARTBEAT_SECONDS <= 5


@pytest.mark.django_db
def test_only_runs_no_worker_took_over_become_interrupted(alice):
    old = timezone.now() - ORPHANED_AFTER - timedelta(seconds=5)
    lost = Run.objects.create(
        owner=alice, task="lost", status=Run.Status.RUNNING, heartbeat_at=old, worker="gone:1"
    )
    Run.objects.create(
        owner=alice, task="alive", status=Run.Status.RUNNING, heartbeat_at=timezone.now()
    )
    stale = timezone.now() - timedelta(seconds=settings.MCPHUB_RUN_STALE_SECONDS + 5)
    Run.objects.create(
        owner=alice, task="to take over", status=Run.Status.RUNNING, heartbeat_at=stale
    )
    Run.objects.create(owner=alice, task="done", status=Run.Status.SUCCEEDED, heartbeat_at=old)

    assert sweep_lost_runs() == 1
    statuses = {r.task: r.status for r in Run.objects.all()}
    assert statuses == {
        "lost": "interrupted",
        "alive": "running",
        "to take over": "running",
        "done": "succeeded",
    }
    lost.refresh_from_db()
    assert "resume" in lost.error and "No live worker" in lost.error


@pytest.mark.django_db
def test_a_run_handed_over_at_shutdown_waits_for_a_claimant_a_minute_from_its_release(alice):
    run = Run.objects.create(
        owner=alice, task="handed over", status=Run.Status.RUNNING, worker=lease.WORKER
    )
    assert lease.release(lease.RUNS, [run.pk]) == 1

    assert sweep_lost_runs() == 0  # a live worker's next tick claims it
    run.refresh_from_db()
    assert run.status == "running" and run.worker == ""

    Run.objects.filter(pk=run.pk).update(heartbeat_at=run.heartbeat_at - ORPHANED_AFTER)
    assert sweep_lost_runs() == 1  # no worker is left to claim it
    run.refresh_from_db()
    assert run.status == "interrupted" and "No live worker" in run.error


@pytest.mark.django_db
def test_a_queued_run_no_worker_took_is_handed_over_again_once_a_minute(alice, monkeypatch):
    from apps.chat.runs import services

    handed: list = []
    monkeypatch.setattr(services, "_enqueue", handed.append)
    old = timezone.now() - ORPHANED_AFTER - timedelta(seconds=5)
    lost = Run.objects.create(owner=alice, task="lost enqueue", heartbeat_at=old)
    legacy = Run.objects.create(owner=alice, task="queued before heartbeats", heartbeat_at=None)
    Run.objects.filter(pk=legacy.pk).update(created_at=old)
    Run.objects.create(owner=alice, task="just queued", heartbeat_at=timezone.now())
    Run.objects.create(owner=alice, task="cancelled", heartbeat_at=old, cancel_requested=True)
    Run.objects.create(
        owner=alice, task="running", status=Run.Status.RUNNING, heartbeat_at=timezone.now()
    )

    sweep_lost_runs()
    assert sorted(map(str, handed)) == sorted([str(lost.pk), str(legacy.pk)])
    lost.refresh_from_db()
    assert lost.status == "queued" and lost.heartbeat_at > old

    sweep_lost_runs()  # within ORPHANED_AFTER of the last hand-off: not again
    assert len(handed) == 2


@pytest.mark.django_db
def test_starting_or_resuming_a_run_stamps_its_hand_off(
    alice, alice_provider, alice_endpoint, monkeypatch
):
    from apps.chat.runs import services

    monkeypatch.setattr(services, "_enqueue", lambda run_id: None)
    run = services.start_run(owner=alice, task="do it")
    assert run.heartbeat_at is not None and timezone.now() - run.heartbeat_at < timedelta(seconds=5)
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.INTERRUPTED, heartbeat_at=timezone.now() - timedelta(hours=1)
    )
    run.refresh_from_db()
    resumed = services.resume_run(run=run)
    assert resumed.status == "queued" and timezone.now() - resumed.heartbeat_at < timedelta(
        seconds=5
    )
