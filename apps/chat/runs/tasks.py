"""Celery delivers a run to a worker; the worker's chat loop runs it (apps/chat/runtime.py).

Registered through apps.chat.tasks, which Celery's autodiscovery reads."""

from __future__ import annotations

import uuid

from celery import shared_task

from apps.chat import runtime
from apps.chat.runs.loop import execute


@shared_task(name="chat.execute_run", ignore_result=True)
def execute_run(run_id: str) -> None:
    # Returns at once, as run_turn does: the run lives on the chat loop for as long as it takes.
    runtime.submit(execute(uuid.UUID(run_id)))
