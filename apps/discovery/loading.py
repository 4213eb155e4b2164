"""The context budget of a dynamic session: which tools are loaded, and what loading evicts.

A session's loaded set maps exposed names to when they were loaded. Pinned tools plus loaded
tools never exceed the endpoint's token budget: loading past it unloads the least recently
used loaded tools first, "used" being the later of the load and the tool's last call in the
call log.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from django.db.models import Max

from apps.discovery.catalog import Catalog
from apps.toolsets import naming
from apps.toolsets.models import ToolCall


@dataclass
class Outcome:
    loaded: list[str] = field(default_factory=list)
    unloaded: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    state: dict[str, float] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.loaded or self.unloaded)


def loaded_tokens(catalog: Catalog, state: dict[str, float]) -> int:
    return catalog.pinned_tokens + sum(
        catalog.entries[n].tokens for n in state if n in catalog.entries
    )


def current(catalog: Catalog, state: dict[str, float]) -> dict[str, float]:
    """The session's loaded set, less tools the owner can no longer see or that became pinned."""
    return {
        n: t for n, t in state.items() if n in catalog.entries and not catalog.entries[n].pinned
    }


def last_calls(endpoint_id: int, names: list[str]) -> dict[str, float]:
    """When each of `names` was last called on the endpoint, from the call log (sync ORM)."""
    rows = (
        ToolCall.objects.filter(endpoint_id=endpoint_id, exposed_name__in=names)
        .values("exposed_name")
        .annotate(last=Max("started_at"))
    )
    return {row["exposed_name"]: row["last"].timestamp() for row in rows}


def _unknown(catalog: Catalog, name: str) -> str:
    return naming.unknown(
        "tool", name, catalog.entries, otherwise=" Find tools with search_tools."
    )[0]


def load(
    catalog: Catalog,
    state: dict[str, float],
    names: list[str],
    *,
    recency=last_calls,
    now: float | None = None,
) -> Outcome:
    """Add `names` to the loaded set within the budget, evicting least recently used tools."""
    now = time.time() if now is None else now
    outcome = Outcome(state=current(catalog, state))
    wanted = list(dict.fromkeys(names))
    for name in wanted:
        entry = catalog.entries.get(name)
        if entry is None:
            outcome.errors[name] = _unknown(catalog, name)
        elif entry.pinned or name in outcome.state:
            outcome.unchanged.append(name)
            if name in outcome.state:
                outcome.state[name] = now
        elif catalog.pinned_tokens + entry.tokens > catalog.token_budget:
            outcome.errors[name] = (
                f"{name} needs ~{entry.tokens} tokens; the endpoint's budget is {catalog.token_budget} "
                f"with {catalog.pinned_tokens} taken by pinned tools."
            )
        else:
            _make_room(catalog, outcome, entry.tokens, keep=set(wanted), recency=recency)
            if loaded_tokens(catalog, outcome.state) + entry.tokens > catalog.token_budget:
                outcome.errors[name] = (
                    f"{name} needs ~{entry.tokens} tokens: no room left by the other tools of this request."
                )
                continue
            outcome.state[name] = now
            outcome.loaded.append(name)
    outcome.unloaded = [n for n in outcome.unloaded if n not in outcome.state]
    return outcome


def _make_room(catalog: Catalog, outcome: Outcome, need: int, *, keep: set[str], recency) -> None:
    if loaded_tokens(catalog, outcome.state) + need <= catalog.token_budget:
        return
    evictable = [n for n in outcome.state if n not in keep]
    called = recency(catalog.endpoint_id, evictable) if evictable else {}
    for name in sorted(evictable, key=lambda n: (max(outcome.state[n], called.get(n, 0.0)), n)):
        del outcome.state[name]
        outcome.unloaded.append(name)
        if loaded_tokens(catalog, outcome.state) + need <= catalog.token_budget:
            return


def unload(catalog: Catalog, state: dict[str, float], names: list[str]) -> Outcome:
    outcome = Outcome(state=current(catalog, state))
    for name in dict.fromkeys(names):
        if name in outcome.state:
            del outcome.state[name]
            outcome.unloaded.append(name)
        elif name in catalog.entries and catalog.entries[name].pinned:
            outcome.errors[name] = (
                f"{name} is pinned (enabled on the endpoint): disable it on the Tools page instead."
            )
        elif name in catalog.entries:
            outcome.unchanged.append(name)
        else:
            outcome.errors[name] = _unknown(catalog, name)
    return outcome
