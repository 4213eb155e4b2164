"""Tool search quality, cost and speed on public query → tool data sets (see retrieval_data.py).

    .venv/bin/python benchmarks/retrieval.py [--quick] [--sets bfcl,toollens,metatool,metatool2]
        [--split test|dev|all] [--queries N] [--data DIR] [--endpoint] [--learn]

An ablation per data set: the plain baselines (BM25 alone, MiniLM alone over the short gist at
128 word pieces, and their equal-weight fusion: the hub's default before issue 29), then each
step of the hub's search turned on in turn (documents: the whole tool text embedded beside the
gist, each tool's better match counting, 256 word pieces; fusion of standardised scores, BM25's
weighted LEXICAL_WEIGHT; a request's parts searched one by one; the query vector moved towards
its nearest tools' by pseudo-relevance feedback, FEEDBACK_WEIGHT), then the default with the
documents step turned off again, and embeddings alone over the new documents. Columns: R@1/5/10 (share of a query's gold tools in the top
k), nDCG@10, "all gold tools in the top 10", query latency p50/p95 over the set's catalog (a
separate pass, nothing cached), and the tokens of the top 5 definitions. `--endpoint`: a
500-tool BFCL endpoint's tools/list static vs dynamic through the real gateway (in-process).
`--learn`: one more row, the default with the usage prior learned from the dev split's searches
(each as if it had led to loading its gold tools), scored on the test split.
The defaults were tuned on `--split dev`; report `--split test` (held out).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import random
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")
os.environ.setdefault("MCPHUB_DEBUG", "true")
os.environ.setdefault("MCPHUB_DATA_DIR", "/tmp/mcphub-bench-data")
os.environ.pop("REDIS_URL", None)
# Queries encoded here (the configs below change the model's settings and memoise its vectors);
# the hub's encoder process runs the same code: benchmarks/retrieval_load.py measures that path.
os.environ["MCPHUB_ENCODER_PROCESSES"] = "0"

import django  # noqa: E402

django.setup()

from apps.catalog.introspection import estimate_tokens  # noqa: E402
from apps.discovery import catalog as discovery_catalog  # noqa: E402
from apps.discovery import embeddings, retrieval, text  # noqa: E402
from apps.discovery.catalog import Catalog, Entry  # noqa: E402
from apps.toolsets import naming  # noqa: E402
from apps.toolsets.exposure import Exposed  # noqa: E402
from benchmarks import retrieval_data  # noqa: E402


def make_catalog(tools: list[retrieval_data.Tool], server: str = "bench") -> Catalog:
    """The tools as one endpoint's catalog: named `server__tool` when they come from several
    servers (as the hub's prefix naming does), repeats numbered (BFCL offers different functions
    under one name, which one server could not)."""
    catalog = Catalog(0, 0, 0, "dynamic", 10**9)
    taken: set[str] = set()
    for i, tool in enumerate(tools):
        wanted = f"{tool.server}__{tool.name}" if tool.server else tool.name
        name, n = naming.fit(wanted), 1
        while name in taken:
            n += 1
            name = naming.fit(f"{wanted}_{n}")
        taken.add(name)
        entry = {"name": name, "description": tool.description, "inputSchema": tool.parameters}
        catalog.entries[name] = Entry(
            Exposed(name, tool.server, tool.name, i, entry),
            estimate_tokens(entry),
            False,
            f"{tool.server or server}.{tool.name}",
            tool.server_description,
        )
    return catalog


# -- the steps, each on or off ----------------------------------------------------------------


class RankHybrid(retrieval.Hybrid):
    """The hybrid before issue 29: equal-vote reciprocal-rank fusion of the two top-50 lists."""

    def search(self, query: str, k: int) -> retrieval.Hits:
        lists = [self.lexical.search(query, retrieval.FUSION_DEPTH)]
        if self.dense.ready.is_set():
            lists.append(self.dense.search(query, retrieval.FUSION_DEPTH))
        return retrieval.fuse(lists)[:k]


@dataclass(frozen=True)
class Config:
    label: str
    method: str
    documents: bool = True  # the whole text embedded beside the gist (best counts), 256 pieces
    scored: bool = True  # standardised scores added (BM25 × LEXICAL_WEIGHT), not rank fusion
    parts: bool = True  # a request's parts searched one by one
    feedback: bool = True  # the query vector moved towards its nearest tools' (Rocchio)


BASELINES = [
    Config("bm25", "bm25", documents=False, scored=False, parts=False, feedback=False),
    Config("embedding", "embedding", documents=False, scored=False, parts=False, feedback=False),
    Config(
        "hybrid (old default)",
        "hybrid",
        documents=False,
        scored=False,
        parts=False,
        feedback=False,
    ),
]
DEFAULT = "+ feedback (default)"
STEPS = [
    Config("+ documents", "hybrid", scored=False, parts=False, feedback=False),
    Config("+ score fusion", "hybrid", parts=False, feedback=False),
    Config("+ parts", "hybrid", feedback=False),
    Config(DEFAULT, "hybrid"),
    Config("default - documents", "hybrid", documents=False),
    Config("embedding + documents", "embedding", parts=False),
]


SINGLES = ("bm25", "embedding", "embedding + documents")


@contextlib.contextmanager
def configured(config: Config) -> Iterator[None]:
    saved = (retrieval.DENSE_VIEWS, embeddings.MAX_TOKENS, retrieval.Hybrid)
    weight = retrieval.FEEDBACK_WEIGHT
    discovery_catalog.forget()  # retrievers are cached per documents: build this config's
    if not config.documents:
        retrieval.DENSE_VIEWS = ("gist",)  # the gist alone, as before issue 29
        embeddings.MAX_TOKENS = 128
    if not config.scored:
        retrieval.Hybrid = RankHybrid
    retrieval.SPLIT_PARTS = config.parts
    retrieval.FEEDBACK_WEIGHT = weight if config.feedback else 0.0
    embeddings.model().tokenizer.enable_truncation(embeddings.MAX_TOKENS)
    try:
        yield
    finally:
        retrieval.DENSE_VIEWS, embeddings.MAX_TOKENS, retrieval.Hybrid = saved
        retrieval.SPLIT_PARTS = True
        retrieval.FEEDBACK_WEIGHT = weight
        embeddings.model().tokenizer.enable_truncation(embeddings.MAX_TOKENS)


@contextlib.contextmanager
def remembered_queries() -> Iterator[None]:
    """Query vectors memoised for the quality pass (the same queries run under every config;
    latency is measured in a pass without it)."""
    encode = embeddings.MiniLM.encode
    memo: dict[tuple[int, str], object] = {}

    def cached(self, texts, *, remember=True):
        if remember:
            return encode(self, texts, remember=True)
        missing = [t for t in texts if (embeddings.MAX_TOKENS, t) not in memo]
        if missing:
            for t, v in zip(missing, encode(self, missing, remember=False)):
                memo[(embeddings.MAX_TOKENS, t)] = v
        import numpy as np

        return np.stack([memo[(embeddings.MAX_TOKENS, t)] for t in texts])

    embeddings.MiniLM.encode = cached
    try:
        yield
    finally:
        embeddings.MiniLM.encode = encode


# -- scoring -------------------------------------------------------------------------------------


def evaluate(catalog: Catalog, queries: list[retrieval_data.Query]) -> dict[str, float]:
    position = {e.exposed.item_id for e in catalog.entries.values()}
    totals = {"R@1": 0.0, "R@5": 0.0, "R@10": 0.0, "nDCG@10": 0.0, "all@10": 0.0, "tok5": 0.0}
    for query in queries:
        hits = catalog.search(query.text, 10)
        ranked = [h.entry.exposed.item_id for h in hits]
        gold = {g for g in query.gold if g in position}
        for k in (1, 5, 10):
            totals[f"R@{k}"] += len(gold & set(ranked[:k])) / len(gold)
        dcg = sum(1 / math.log2(r + 2) for r, doc in enumerate(ranked) if doc in gold)
        ideal = sum(1 / math.log2(r + 2) for r in range(min(len(gold), 10)))
        totals["nDCG@10"] += dcg / ideal
        totals["all@10"] += gold <= set(ranked)
        totals["tok5"] += sum(h.entry.tokens for h in hits[:5])
    result = {k: 100 * v / len(queries) for k, v in totals.items()}
    result["tok5"] /= 100
    return result


def _percentiles(samples: list[float]) -> tuple[float, float]:
    samples = sorted(samples)
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.95))]


def latency(
    catalog: Catalog, queries: list[retrieval_data.Query], runs: int
) -> tuple[float, float]:
    samples = []
    for query in queries[:runs]:
        start = time.perf_counter()
        catalog.search(query.text, 10)
        samples.append((time.perf_counter() - start) * 1000)
    return _percentiles(samples)


def _row(label: str, scores: dict[str, float]) -> None:
    print(
        f"{label:<24} {scores['R@1']:6.1f} {scores['R@5']:6.1f} "
        f"{scores['R@10']:6.1f} {scores['nDCG@10']:8.1f} {scores['all@10']:7.1f}   "
        f"{scores['p50']:7.1f} {scores['p95']:6.1f}   {scores['tok5']:8.0f}"
    )


def learn_from(catalog: Catalog, searches: list[retrieval_data.Query]) -> None:
    """The usage prior's lessons as if every one of `searches` had led its user to load its gold
    tools on this endpoint (apps.discovery.services.learn, counted the same way)."""
    from apps.discovery.services import search_terms

    counts: dict[tuple[str, int], int] = {}
    for query in searches:
        terms = search_terms([query.text])
        for tool_id in query.gold:
            counts[terms, tool_id] = counts.get((terms, tool_id), 0) + 1
    catalog.learned = [
        (frozenset(terms.split()), tool_id, n) for (terms, tool_id), n in counts.items() if terms
    ][-discovery_catalog.LEARNED_ROWS :]


def ablation(
    dataset: retrieval_data.Dataset,
    queries: list[retrieval_data.Query],
    configs: list[Config],
    runs: int,
    learned: list[retrieval_data.Query] | None = None,
) -> dict[str, dict[str, float]]:
    catalog = make_catalog(dataset.tools)
    multi = sum(len(q.gold) > 1 for q in queries)
    print(
        f"\n{dataset.name} ({dataset.source.repo} @ {dataset.source.commit[:12]}): "
        f"{len(dataset.tools)} tools, {len(queries)} queries ({multi} with several gold tools, "
        f"{sum(bool(text.parts(q.text)) for q in queries)} split into parts); "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'config':<24} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'nDCG@10':>8} {'all@10':>7}   "
        f"{'p50 ms':>7} {'p95':>6}   {'tok top5':>8}"
    )
    results = {}
    for config in configs:
        if config.method != "bm25" and not embeddings.available():
            continue
        with configured(config):
            discovery_catalog.index(catalog, method=config.method, background=False)
            with remembered_queries():
                scores = evaluate(catalog, queries)
            scores["p50"], scores["p95"] = latency(catalog, queries, runs)
        results[config.label] = scores
        _row(config.label, scores)
    if learned:
        with configured(Config("", "hybrid")):
            discovery_catalog.index(catalog, method="hybrid", background=False)
            learn_from(catalog, learned)
            with remembered_queries():
                scores = evaluate(catalog, queries)
            scores["p50"], scores["p95"] = latency(catalog, queries, runs)
            catalog.learned = []
        label = f"default + {len(learned)} learned"
        results[label] = scores
        _row(label, scores)
    default = results.get(DEFAULT)
    singles = [r["R@5"] for label, r in results.items() if label in SINGLES]
    if default and singles:
        print(
            f"default R@5 {default['R@5']:.1f} vs best single method {max(singles):.1f} "
            f"({default['R@5'] - max(singles):+.1f}); every definition at once: "
            f"{sum(e.tokens for e in catalog.entries.values()):,} tokens"
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, help="a folder with one sub-folder per data set")
    parser.add_argument("--sets", default=",".join(retrieval_data.SETS))
    parser.add_argument("--split", default="test", choices=("test", "dev", "all"))
    parser.add_argument("--queries", type=int, default=2000, help="at most this many per set")
    parser.add_argument("--quick", action="store_true", help="300 queries, 50 latency runs")
    parser.add_argument(
        "--configs", default="", help="labels to run (comma-separated), default all"
    )
    parser.add_argument("--endpoint", action="store_true", help="the 500-tool endpoint too")
    parser.add_argument(
        "--learn",
        action="store_true",
        help="a row with the usage prior learned from the dev split's searches (as loads of "
        "their gold tools), scored on the test split",
    )
    args = parser.parse_args()
    limit, runs = (300, 50) if args.quick else (args.queries, 200)
    wanted = {c.strip() for c in args.configs.split(",") if c.strip()}
    configs = [c for c in BASELINES + STEPS if not wanted or c.label in wanted]
    print(
        f"default method: {retrieval.resolve('auto')}; LEXICAL_WEIGHT {retrieval.LEXICAL_WEIGHT}, "
        f"PART_WEIGHT {retrieval.PART_WEIGHT}, FEEDBACK_WEIGHT {retrieval.FEEDBACK_WEIGHT}, "
        f"MAX_TOKENS {embeddings.MAX_TOKENS}; split {args.split}"
    )
    for name in args.sets.split(","):
        dataset = retrieval_data.load_set(name, args.data)
        queries = dataset.split(args.split)
        if len(queries) > limit:
            queries = random.Random(14).sample(queries, limit)
        learned = dataset.split("dev")[:limit] if args.learn and args.split == "test" else None
        ablation(dataset, queries, configs, runs, learned)
    if args.endpoint:
        from benchmarks.retrieval_endpoint import static_vs_dynamic

        tools, queries = retrieval_data.load(args.data)
        distinct = list({t.name: t for t in reversed(tools)}.values())[::-1]
        static_vs_dynamic(distinct[:500], queries)


if __name__ == "__main__":
    main()
