"""Writes: activation patterns. Each change moves the endpoint's version, so every web process
rebuilds its catalog (patterns included) on its next request."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.discovery.models import MAX_PATTERNS, ActivationPattern
from apps.toolsets.events import announce_tools_changed
from apps.toolsets.models import Endpoint


def create_pattern(
    *, endpoint: Endpoint, pattern: str, targets: list[str], priority: int = 0
) -> ActivationPattern:
    row = ActivationPattern(endpoint=endpoint, pattern=pattern, targets=targets, priority=priority)
    return _save(row, new=True)


def update_pattern(*, row: ActivationPattern, **fields: object) -> ActivationPattern:
    """Change `fields` (pattern, targets, priority) of `row`; `row` is not called `pattern`
    because `pattern` is one of the fields."""
    for name, value in fields.items():
        setattr(row, name, value)
    return _save(row)


def delete_pattern(*, pattern: ActivationPattern) -> None:
    with transaction.atomic():
        pattern.delete()
        announce_tools_changed([pattern.endpoint_id])


def _save(row: ActivationPattern, *, new: bool = False) -> ActivationPattern:
    row.full_clean()  # a bad expression or target is a clear ValidationError, and nothing is saved
    with transaction.atomic():
        if new:
            # The endpoint's row lock makes the count and the insert one step for concurrent adds.
            Endpoint.objects.select_for_update().filter(pk=row.endpoint_id).first()
            if (
                ActivationPattern.objects.filter(endpoint_id=row.endpoint_id).count()
                >= MAX_PATTERNS
            ):
                raise ValidationError(
                    {
                        "pattern": f"An endpoint holds at most {MAX_PATTERNS} activation patterns: remove one first."
                    }
                )
        row.save()
        announce_tools_changed([row.endpoint_id])
    return row
