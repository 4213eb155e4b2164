"""Reads other apps use: ranked tool search for the Tools page."""

from __future__ import annotations

from apps.discovery import catalog as discovery_catalog
from apps.toolsets.models import Endpoint


def rank_tools(*, endpoint: Endpoint, query: str, limit: int) -> list[int]:
    """Ids of the tools `endpoint`'s owner may enable, best match for `query` first (sync ORM)."""
    catalog = discovery_catalog.build(endpoint.pk, version=None)
    if catalog is None:
        return []
    # Lexical only: a page search shows what matches the words typed; embeddings would rank
    # every tool somewhere, and the page has no top-k to hide the tail.
    discovery_catalog.index(catalog, method="bm25")
    return [hit.entry.exposed.item_id for hit in catalog.search(query, limit)]
