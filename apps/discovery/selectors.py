"""Reads other apps use: ranked tool search for the Tools page."""

from __future__ import annotations

from apps.discovery import catalog as discovery_catalog
from apps.toolsets.models import Endpoint

# A page lists every hit, so weak ones (a word every tool has, like "tool") are cut below this
# share of the best score.
RELATIVE_CUTOFF = 0.4


def rank_tools(*, endpoint: Endpoint, query: str, limit: int) -> list[int]:
    """Ids of the tools `endpoint`'s owner may enable, best match for `query` first (sync ORM)."""
    catalog = discovery_catalog.fresh(endpoint.pk)
    if catalog is None:
        return []
    # Lexical only: a page search shows what matches the words typed; embeddings would rank
    # every tool somewhere, and the page has no top-k to hide the tail.
    hits = catalog.search(query, limit, lexical=True)
    return [
        hit.entry.exposed.item_id for hit in hits if hit.score >= RELATIVE_CUTOFF * hits[0].score
    ]
