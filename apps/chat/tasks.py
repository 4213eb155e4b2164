"""Celery delivers a turn to a worker; the worker's chat loop runs it (see runtime.py)."""

from __future__ import annotations

import uuid

from celery import shared_task

from apps.chat import runtime
from apps.chat.orchestrator import run_turn as turn
from apps.chat.recovery import expire, lost_turns
from apps.chat.runs import services as run_services

# The runs' own task, registered here: Celery's autodiscovery reads each app's `tasks` module only.
from apps.chat.runs.tasks import execute_run  # noqa: F401


@shared_task(name="chat.run_turn", ignore_result=True)
def run_turn(turn_id: str) -> None:
    # Returns at once: the turn waits on a model for seconds, on the loop, not on a Celery thread.
    runtime.submit(turn(uuid.UUID(turn_id)))


@shared_task(name="chat.expire_lost_turns", ignore_result=True)
def expire_lost_turns() -> None:
    expire(lost_turns())


@shared_task(name="chat.sweep_lost_runs", ignore_result=True)
def sweep_lost_runs() -> None:
    run_services.sweep_lost_runs()
