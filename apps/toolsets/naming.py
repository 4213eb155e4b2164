"""Names clients see: `^[A-Za-z0-9_-]{1,64}$`, deterministic, stable across restarts.

`prefixed`: always `server__tool`. `hybrid`: the tool's own name unless two enabled items share
it, then `server__tool` for those. Names too long are cut and suffixed with a hash of the full
name, so two long names never collide and the same inputs always give the same output.

A name clients already use is kept: an item may carry the name it was first exposed under
(`Candidate.fixed`, stored per enabled tool), which it keeps whatever is added later — a clash is
resolved for the newcomer, never by renaming what a client already calls. An owner's override
comes before both.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MAX_NAME = 64
SEPARATOR = "__"
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class Candidate:
    """One item to name: its server, its own name, and an optional per-endpoint override."""

    server: str
    name: str
    override: str = ""
    fixed: str = ""  # the name it was first exposed under (kept unless the owner changes it)

    @property
    def pinned(self) -> str:
        return self.override or self.fixed


def clean(name: str) -> str:
    return _INVALID.sub("_", name) or "_"


def fit(name: str) -> str:
    """`name` made valid and at most 64 characters (hash-suffixed when cut)."""
    cleaned = clean(name)
    if len(cleaned) <= MAX_NAME and cleaned == name:
        return name
    if len(cleaned) <= MAX_NAME:
        return cleaned
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{cleaned[: MAX_NAME - 9]}_{digest}"


def prefixed(server: str, name: str) -> str:
    return fit(f"{server}{SEPARATOR}{name}")


def assign(candidates: Sequence[Candidate], strategy: str) -> list[str]:
    """Exposed names for `candidates`, in order; unique within the list."""
    natural = [fit(c.name) for c in candidates]
    # Only newcomers compete for a plain name: one a pinned item holds is taken.
    clashes = Counter(plain for c, plain in zip(candidates, natural) if not c.pinned)
    taken = {c.pinned for c in candidates if c.pinned}
    names = []
    for candidate, plain in zip(candidates, natural):
        if candidate.pinned:
            names.append(candidate.pinned)
        elif strategy == "hybrid" and clashes[plain] == 1 and plain not in taken:
            names.append(plain)
        else:
            names.append(prefixed(candidate.server, candidate.name))
    return _dedupe(names, candidates)


def _dedupe(names: list[str], candidates: Sequence[Candidate]) -> list[str]:
    # An override may equal another item's kept or generated name: the override keeps it, then a
    # kept name, and the other falls back to a prefixed (then hash-suffixed) name.
    seen: set[str] = set()
    result = []
    for name, candidate in sorted(zip(names, candidates), key=_claim_order):
        if name in seen:
            name = prefixed(candidate.server, candidate.name)
        if name in seen:
            name = fit(
                f"{candidate.server}{SEPARATOR}{candidate.name}{SEPARATOR}{_short_hash(candidate)}"
            )
        seen.add(name)
        result.append((candidate, name))
    order = {id(candidate): name for candidate, name in result}
    return [order[id(candidate)] for candidate in candidates]


def _claim_order(pair: tuple[str, Candidate]) -> tuple[bool, bool, str]:
    name, candidate = pair
    return (not candidate.override, not candidate.fixed, name)


def _short_hash(candidate: Candidate) -> str:
    return hashlib.sha256(f"{candidate.server}/{candidate.name}".encode()).hexdigest()[:6]


def suggest(requested: str, names: Iterable[str], limit: int = 3) -> list[str]:
    """The exposed names a caller most likely meant (same tool under a prefix first)."""
    names = list(names)
    same_tool = sorted(
        n
        for n in names
        if n.endswith(f"{SEPARATOR}{requested}") or requested.endswith(f"{SEPARATOR}{n}")
    )
    close = difflib.get_close_matches(requested, names, n=limit, cutoff=0.5)
    return list(dict.fromkeys([*same_tool, *close]))[: max(limit, len(same_tool))]


def unknown(
    kind: str, requested: str, names: Iterable[str], *, otherwise: str = ""
) -> tuple[str, list[str]]:
    """What to tell a caller who named no such tool (or prompt): the message, with the names they
    most likely meant ("Did you mean: …?", or `otherwise` when none is close), and those names."""
    suggestions = suggest(requested, names)
    hint = f" Did you mean: {', '.join(suggestions)}?" if suggestions else otherwise
    return f"Unknown {kind}: {requested}.{hint}", suggestions
