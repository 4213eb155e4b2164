"""Rank tools for a query: BM25 (bm25s), optional MiniLM embeddings, and their fusion.

Each retriever is built once over a list of documents and answers `search(query, k)` with
(document position, score) pairs, best first. The method is a setting
(`MCPHUB_DISCOVERY_METHOD`): `bm25`, `embedding`, `hybrid`, or `auto` (hybrid when the
embedding model is installed, else BM25).

The hybrid adds the two methods' scores, each standardised over the catalog (z-scores), BM25's
weighted LEXICAL_WEIGHT: equal-vote rank fusion made the default worse than embeddings alone
where BM25 is weak, and standardised scores let a method that is sure of one tool outvote one
that is not. A request of several parts ("find X, then send Y") is also searched part by part,
and a tool's best part adds to its score for the whole (PART_WEIGHT), so each needed tool gets
its own chance. The embedding half scores each query twice: once as asked, once moved towards
its nearest tools (pseudo-relevance feedback, FEEDBACK_WEIGHT). The constants were chosen on
development splits of public data sets
(benchmarks/retrieval.py --split dev).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from apps.discovery import embeddings, text

logger = logging.getLogger(__name__)

METHODS = ("auto", "bm25", "embedding", "hybrid")
RRF_K = 60  # reciprocal-rank fusion's damping constant (Cormack et al. 2009)
FUSION_DEPTH = 50  # how deep each retriever's list goes into the fusion
LEXICAL_WEIGHT = 0.3  # BM25's share of the hybrid score (the embeddings' is the rest)
DENSE_VIEWS = ("gist", "full")  # the Document fields embedded, each tool's best one counting
SPLIT_PARTS = True  # search a request's parts too (text.parts)
PART_WEIGHT = 1.0  # a tool's best part score, added to its score for the whole request
# Pseudo-relevance feedback (Rocchio): a query's vector gets FEEDBACK_WEIGHT × the mean vector of
# its FEEDBACK_DEPTH nearest tools added before it is scored again, so tools described in the
# words of the best matches, not the asker's, come up too. Held-out R@5 (benchmarks/
# retrieval.py --split test): MetaTool 78.5 -> 79.8, BFCL 75.3 -> 75.5, ToolLens 38.0 -> 38.2,
# MetaTool two-tool 72.2 -> 72.2; on the dev splits it chose its weight on, at most 0.1 lower.
FEEDBACK_WEIGHT = 0.2
FEEDBACK_DEPTH = 3
KEEP_STORED = 64  # vector files kept (~3 MB each for 2,000 tools)

Hits = list[tuple[int, float]]


class Retriever(Protocol):
    def search(self, query: str, k: int) -> Hits: ...


@dataclass(frozen=True)
class Document:
    """What one tool is searched by: all its words (`full`) for BM25; for embeddings both the
    short `gist` and `full`, a tool scoring its better match (one vector of a long text blurs
    what the tool does, one of the gist misses its parameters and server)."""

    full: str
    gist: str
    name: str = ""  # the tool's name in words: BM25 counts it twice (see `lexical`)

    @property
    def lexical(self) -> str:
        """What BM25 indexes: `full` with the name once more, a field weight (what a tool is
        called says most: "weather" finds get_weather_forecast before a tool that mentions
        the weather; neutral on the benchmarks' development splits, ±0.4 R@5)."""
        return f"{self.name} \n{self.full}" if self.name else self.full


def resolve(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"Unknown discovery method {method!r}: use one of {', '.join(METHODS)}")
    if method == "auto":
        return "hybrid" if embeddings.available() else "bm25"
    return method


def build(
    method: str,
    documents: Sequence[Document],
    *,
    background: bool = False,
    store: Path | None = None,
) -> Retriever:
    """A retriever over `documents`; with `background`, embeddings are computed in a thread and
    the hybrid answers with BM25 alone until they are ready (`store`: where vectors are kept)."""
    method = resolve(method)
    if method == "bm25":
        return BM25([d.lexical for d in documents])
    views = [[getattr(d, view) for d in documents] for view in DENSE_VIEWS]
    dense = Dense(
        [t for texts in views for t in texts], views=len(views), background=background, store=store
    )
    if method == "embedding":
        return dense
    return Hybrid(BM25([d.lexical for d in documents]), dense)


def _top(scores, k: int) -> Hits:
    import numpy as np

    k = min(k, len(scores))
    if k <= 0:
        return []
    best = np.argpartition(-scores, k - 1)[:k]
    best = best[np.argsort(-scores[best], kind="stable")]
    return [(int(i), float(scores[i])) for i in best if scores[i] > 0]


class BM25:
    """Okapi BM25 (Lucene's variant) over stemmed, stop-worded terms."""

    def __init__(self, documents: Sequence[str]) -> None:
        import bm25s

        self.size = len(documents)
        self.index = bm25s.BM25(k1=1.2, b=0.75)
        if self.size:
            # An empty document still needs a term: bm25s cannot index a corpus with no vocabulary.
            corpus = [t or ["\x00"] for t in text.terms_of_all(documents)]
            self.index.index(corpus, show_progress=False)

    def search(self, query: str, k: int) -> Hits:
        scores = self.scores(query)
        return _top(scores, k) if scores is not None else []

    def scores(self, query: str):
        """Every document's score (numpy), or None when no word of `query` is indexed."""
        words = [w for w in text.terms(query) if w in getattr(self.index, "vocab_dict", {})]
        if not words or not self.size:
            return None
        return self.index.get_scores(words)


class Dense:
    """Cosine similarity of MiniLM sentence vectors."""

    def __init__(
        self,
        documents: Sequence[str],
        *,
        views: int = 1,
        background: bool = False,
        store: Path | None = None,
    ) -> None:
        self.documents = list(documents)
        self.store = store  # a .npy file the vectors are kept in, shared by processes and restarts
        self.views = views  # texts per document (`documents` is view by view): best one counts
        self.matrix = None
        self.ready = threading.Event()
        if background:
            threading.Thread(target=self._encode, name="mcphub-embed", daemon=True).start()
        else:
            self._encode()

    def _encode(self) -> None:
        try:
            self.matrix = self._stored() if self.store else None
            if self.matrix is None:
                self.matrix = embeddings.encoder().encode(self.documents)
                self._store()
        except Exception:  # noqa: BLE001 - search goes on with BM25 alone
            logger.exception("could not embed %d tool documents", len(self.documents))
        finally:
            self.ready.set()

    def _stored(self):
        """Vectors another process (or this one before a restart) computed for the same documents."""
        import numpy as np

        try:
            matrix = np.load(self.store)
        except (OSError, ValueError):
            return None
        return matrix if matrix.shape[0] == len(self.documents) else None

    def _store(self) -> None:
        import numpy as np

        if not self.store:
            return
        try:
            self.store.parent.mkdir(parents=True, exist_ok=True)
            partial = self.store.with_suffix(f".{threading.get_ident()}.tmp.npy")
            np.save(partial, self.matrix)
            partial.replace(self.store)  # atomic: a reader never sees half a file
            kept = sorted(
                self.store.parent.glob("*.npy"), key=lambda f: f.stat().st_mtime, reverse=True
            )
            for old in kept[KEEP_STORED:]:  # catalogs change: vectors of old versions go
                old.unlink(missing_ok=True)
        except OSError:
            logger.warning("could not keep tool vectors in %s", self.store, exc_info=True)

    def search(self, query: str, k: int) -> Hits:
        scores = self.scores([query])[0]
        return _top(scores, k) if scores is not None else []

    def scores(self, queries: Sequence[str], *, feedback: bool = True) -> list:
        """Every document's similarity per query (numpy; None for a blank one), encoded in one
        batch: the cosine with the query's vector, moved towards its nearest tools' (`feedback`,
        see FEEDBACK_WEIGHT) unless asked for the plain cosine."""
        if self.matrix is None or not len(self.documents):
            return [None for _ in queries]
        asked = list(dict.fromkeys(q for q in queries if q.strip()))
        try:
            vectors = embeddings.encoder().encode(asked, remember=False) if asked else []
        except Exception:  # noqa: BLE001 - an encoder process failed: BM25 answers alone
            logger.exception("could not encode %d queries", len(asked))
            return [None for _ in queries]
        scores = dict(zip(asked, (self._cosines(v, feedback) for v in vectors)))
        return [scores.get(q) for q in queries]

    def _cosines(self, vector, feedback: bool):
        """Each document's best view's cosine with `vector` (with `feedback`: once more with the
        vector moved towards the mean of every view of its FEEDBACK_DEPTH best documents)."""
        import numpy as np

        cosines = (self.matrix @ vector).reshape(self.views, -1).max(0)
        if not feedback or not FEEDBACK_WEIGHT:
            return cosines
        nearest = np.argpartition(-cosines, min(FEEDBACK_DEPTH, len(cosines)) - 1)[:FEEDBACK_DEPTH]
        views = self.matrix.reshape(self.views, len(cosines), -1)
        moved = vector + FEEDBACK_WEIGHT * views[:, nearest].mean(axis=(0, 1))
        moved /= np.linalg.norm(moved)
        return (self.matrix @ moved).reshape(self.views, -1).max(0)


class Hybrid:
    """BM25 and embeddings, their standardised scores added (BM25's × LEXICAL_WEIGHT); a
    request of several parts is searched whole and part by part."""

    def __init__(self, lexical: BM25, dense: Dense) -> None:
        self.lexical = lexical
        self.dense = dense

    def search(self, query: str, k: int) -> Hits:
        queries = [query, *text.parts(query)] if SPLIT_PARTS else [query]
        dense = self.dense.scores(queries) if self.dense.ready.is_set() else [None for _ in queries]
        fused = [combine(self.lexical.scores(q), d) for q, d in zip(queries, dense)]
        whole, parts = fused[0], [f for f in fused[1:] if f is not None]
        if whole is None:
            return []
        if parts:
            import numpy as np

            whole = whole + PART_WEIGHT * np.max(parts, axis=0)
        # A standardised score can be below zero: keep the best k that either method matched.
        return _top(whole - whole.min() + 1e-6, k)


def combine(lexical, dense):
    """LEXICAL_WEIGHT × z(BM25) + (1 − LEXICAL_WEIGHT) × z(cosine); either alone when the other
    has nothing (no word of the query indexed, vectors not ready); None when both have nothing."""
    if lexical is None and dense is None:
        return None
    if dense is None:
        return _standard(lexical)
    if lexical is None:
        return _standard(dense)
    return LEXICAL_WEIGHT * _standard(lexical) + (1 - LEXICAL_WEIGHT) * _standard(dense)


def _standard(scores):
    spread = scores.std()
    return (scores - scores.mean()) / spread if spread > 0 else scores * 0.0


def fuse(lists: Sequence[Hits], weights: Sequence[float] | None = None) -> Hits:
    """Reciprocal-rank fusion: each list votes weight/(RRF_K + rank) (the hybrid before issue
    29, kept for comparison in benchmarks/retrieval.py)."""
    votes: dict[int, float] = {}
    for hits, weight in zip(lists, weights or [1.0] * len(lists)):
        for rank, (doc, _) in enumerate(hits, start=1):
            votes[doc] = votes.get(doc, 0.0) + weight / (RRF_K + rank)
    return sorted(votes.items(), key=lambda item: (-item[1], item[0]))
