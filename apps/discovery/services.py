"""Writes: activation patterns (each change moves the endpoint's version, so every web process
rebuilds its catalog, patterns included, on its next request); what searches led to loads."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from apps.core.threads import in_thread
from apps.discovery import text
from apps.discovery.models import MAX_LEARNED_TERMS, MAX_PATTERNS, ActivationPattern, LearnedSearch
from apps.toolsets.events import announce_tools_changed
from apps.toolsets.models import Endpoint

logger = logging.getLogger(__name__)

# A load this long after a session's last search still counts as that search's outcome.
LEARN_SECONDS = 900


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


# -- searches that led to loads (the usage prior learns from them) ------------------------------


def search_terms(queries: Iterable[str]) -> str:
    """What a search is remembered by: its distinct terms (stemmed, no stop words), sorted."""
    terms = sorted({t for q in queries for t in text.terms(q)})[:MAX_LEARNED_TERMS]
    kept = " ".join(terms)
    return kept if len(kept) <= 500 else kept[:500].rsplit(" ", 1)[0]


def _last_search(session_id: str) -> str:
    return f"discovery:search:{session_id}"


async def remember_search(*, session_id: str, queries: Sequence[str], names: Sequence[str]) -> None:
    """Keep a session's last search (its terms and the names it returned) for LEARN_SECONDS."""
    terms = search_terms(queries)
    if terms:
        await cache.aset(
            _last_search(session_id), {"terms": terms, "names": list(names)}, LEARN_SECONDS
        )


async def learn_from_loads(*, session_id: str, endpoint_id: int, loaded: Mapping[str, int]) -> int:
    """`loaded` (exposed name → tool id) were just loaded or called in the session: those its
    last search returned are learned for that search's terms. Returns how many were."""
    last = await cache.aget(_last_search(session_id))
    if not last:
        return 0
    tool_ids = [tool_id for name, tool_id in loaded.items() if name in last["names"]]
    if tool_ids:
        await in_thread(learn)(endpoint_id=endpoint_id, terms=last["terms"], tool_ids=tool_ids)
    return len(tool_ids)


def learn(*, endpoint_id: int, terms: str, tool_ids: Sequence[int]) -> None:
    """Count one more search of `terms` that led to each of `tool_ids` on the endpoint."""
    now = timezone.now()
    for tool_id in tool_ids:
        rows = LearnedSearch.objects.filter(endpoint_id=endpoint_id, tool_id=tool_id, terms=terms)
        try:
            with transaction.atomic():
                if not rows.update(count=F("count") + 1, last_at=now):
                    LearnedSearch.objects.create(
                        endpoint_id=endpoint_id, tool_id=tool_id, terms=terms, last_at=now
                    )
        except IntegrityError:  # a concurrent first one, or the tool or endpoint just deleted
            rows.update(count=F("count") + 1, last_at=now)
