"""Celery delivers a turn to a worker; the worker's chat loop runs it (see runtime.py)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="chat.run_turn", ignore_result=True)
def run_turn(turn_id: str) -> None:
    # Returns at once: the turn waits on a model for seconds, on the loop, not on a Celery thread.
    from apps.chat import runtime

    runtime.submit(turn_id)


@shared_task(name="chat.expire_lost_turns", ignore_result=True)
def expire_lost_turns() -> None:
    from apps.chat.recovery import expire, lost_turns

    expire(lost_turns())
