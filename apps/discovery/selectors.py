"""Reads other apps use: ranked tool search for the Tools page."""

from __future__ import annotations

from apps.discovery import catalog as discovery_catalog
from apps.toolsets.models import Endpoint

# A page lists every hit, so weak ones (a word every tool has, like "tool") are cut below this
# share of the best BM25 score.
RELATIVE_CUTOFF = 0.4
# ... and a tool that shares no word with the query is listed only when its meaning is this close
# (MiniLM cosine; unrelated tools of one catalog sit around 0.1-0.3).
MEANING_CUTOFF = 0.5


def rank_tools(*, endpoint: Endpoint, query: str, limit: int) -> list[int]:
    """Ids of the tools `endpoint`'s owner may enable that match `query`, in the order
    `search_tools` and suggestions rank them (the one ranking: BM25 and embeddings fused, the
    usage prior), best first (sync ORM).

    Which tools are listed: those whose words match (a page has no top-k to hide a tail, and
    embeddings give every tool some score) and those close in meaning. Enabled tools are not put
    first: the page shows each tool's toggle, and a better tool not enabled yet is what a
    search is for."""
    catalog = discovery_catalog.fresh(endpoint.pk)
    if catalog is None:
        return []
    words = catalog.search(query, limit, lexical=True)
    matched = {
        hit.entry.exposed.item_id for hit in words if hit.score >= RELATIVE_CUTOFF * words[0].score
    } | catalog.similar(query, MEANING_CUTOFF)
    ranked = [hit.entry.exposed.item_id for hit in catalog.search(query, len(catalog.entries))]
    return [tool_id for tool_id in ranked if tool_id in matched][:limit]
