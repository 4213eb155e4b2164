"""Celery delivers a turn to a worker; the worker's chat loop runs it (see runtime.py)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="chat.run_turn", ignore_result=True)
def run_turn(turn_id: str) -> None:
    # Returns at once: the turn waits on a model for seconds, on the loop, not on a Celery thread.
    from apps.chat import runtime

    runtime.submit(turn_id)


@shared_task(name="chat.execute_run", ignore_result=True)
def execute_run(run_id: str) -> None:
    # Returns at once, as run_turn does: the run lives on the chat loop for as long as it takes.
    from apps.chat import runtime

    runtime.submit_run(run_id)


@shared_task(name="chat.sweep_lost_runs", ignore_result=True)
def sweep_lost_runs() -> None:
    from apps.chat.runs.services import sweep_lost_runs as sweep

    sweep()


@shared_task(name="chat.expire_lost_turns", ignore_result=True)
def expire_lost_turns() -> None:
    from apps.chat.recovery import expire, lost_turns

    expire(lost_turns())
