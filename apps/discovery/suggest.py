""" "Which tools for this task?": the best-ranked tools that fit a token budget, each with why.

A read (selector): it changes nothing. Applying a suggestion is the caller's next step
(`PUT /api/endpoints/<slug>/enabled-tools/` replaces or, with the current keys added, merges).
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.discovery import catalog as discovery_catalog
from apps.discovery import text
from apps.discovery.catalog import Hit
from apps.toolsets.models import Endpoint

SEARCH_DEPTH = 50


@dataclass(frozen=True)
class Suggestion:
    key: str
    name: str
    server: str
    description: str
    tokens: int
    score: float
    enabled: bool
    reason: str


@dataclass(frozen=True)
class Suggestions:
    task: str
    budget: int
    tokens: int
    tools: list[Suggestion]
    left_out: int  # relevant tools that did not fit the budget or the limit


def suggest_tools(*, endpoint: Endpoint, task: str, budget: int, limit: int = 10) -> Suggestions:
    """The best tools for `task` among those the endpoint's owner may enable, within `budget` tokens."""
    catalog = discovery_catalog.fresh(endpoint.pk)
    chosen: list[Suggestion] = []
    used = left_out = 0
    for hit in catalog.search(task, SEARCH_DEPTH):
        if len(chosen) >= limit or used + hit.entry.tokens > budget:
            left_out += 1
            continue
        used += hit.entry.tokens
        chosen.append(_suggestion(hit, task))
    return Suggestions(task, budget, used, chosen, left_out)


def _suggestion(hit: Hit, task: str) -> Suggestion:
    entry = hit.entry
    return Suggestion(
        entry.key,
        entry.name,
        entry.exposed.server,
        entry.description,
        entry.tokens,
        hit.score,
        entry.pinned,
        _reason(task, discovery_catalog.document(entry).full),
    )


def _reason(task: str, document: str) -> str:
    """The task's words the tool's name, description or parameters share (stems compared)."""
    found = set(text.terms(document))
    words = [w for w in dict.fromkeys(text.words(task)) if set(text.terms(w)) & found]
    return f"matches: {', '.join(words)}" if words else "similar meaning (no shared words)"
