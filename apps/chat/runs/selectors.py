"""Permission-scoped reads of runs: a user sees only their own."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from apps.chat.runs.models import Run, RunStep


def runs_for(user) -> QuerySet[Run]:
    if not getattr(user, "is_authenticated", False):
        return Run.objects.none()
    return Run.objects.filter(owner=user).select_related("provider", "endpoint")


def run_for(user, run_id: object) -> Run | None:
    """The user's run, or None (also for another user's: nothing to learn from the difference)."""
    try:
        key = uuid.UUID(str(run_id))
    except ValueError:
        return None
    return runs_for(user).filter(pk=key).first()


def steps_of(run: Run) -> QuerySet[RunStep]:
    return run.steps.order_by("round")
