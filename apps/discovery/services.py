"""Writes: activation patterns. Each change moves the endpoint's version, so every web process
rebuilds its catalog (patterns included) on its next request."""

from __future__ import annotations

from django.db import transaction

from apps.discovery.models import ActivationPattern
from apps.toolsets.events import announce_tools_changed
from apps.toolsets.models import Endpoint


def create_pattern(*, endpoint: Endpoint, pattern: str, targets: list[str], priority: int = 0) -> ActivationPattern:
    row = ActivationPattern(endpoint=endpoint, pattern=pattern, targets=targets, priority=priority)
    return _save(row)


def update_pattern(*, pattern: ActivationPattern, **fields) -> ActivationPattern:
    for name, value in fields.items():
        setattr(pattern, name, value)
    return _save(pattern)


def delete_pattern(*, pattern: ActivationPattern) -> None:
    with transaction.atomic():
        pattern.delete()
        announce_tools_changed([pattern.endpoint_id])


def _save(row: ActivationPattern) -> ActivationPattern:
    row.full_clean()  # a bad expression or target is a clear ValidationError, and nothing is saved
    with transaction.atomic():
        row.save()
        announce_tools_changed([row.endpoint_id])
    return row
