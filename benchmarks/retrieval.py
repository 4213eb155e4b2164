"""Tool search quality, cost and speed on a public query → tool dataset (BFCL; see retrieval_data.py).

    .venv/bin/python benchmarks/retrieval.py [--quick] [--data DIR] [--methods bm25,embedding,hybrid]

For each method: R@1/5/10 (share of a query's gold tools in the top k), nDCG@10, "all gold tools
in the top 10", and query latency p50/p95 over the whole catalog (N tools) and over 2,000 tools,
with the query's own CPU time (p50): on a busy shared host wall time mostly measures the queue.
Then tokens: the top-5 definitions a dynamic client loads vs every definition at once, and a
500-tool endpoint's tools/list in dynamic vs static mode, through the real gateway (in-process).
The hub's default method is `auto` (hybrid when the embedding model is installed).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")
os.environ.setdefault("MCPHUB_DEBUG", "true")
os.environ.setdefault("MCPHUB_DATA_DIR", "/tmp/mcphub-bench-data")
os.environ.pop("REDIS_URL", None)

import django  # noqa: E402

django.setup()

from apps.catalog.introspection import estimate_tokens  # noqa: E402
from apps.discovery import catalog as discovery_catalog  # noqa: E402
from apps.discovery import embeddings, retrieval  # noqa: E402
from apps.discovery.catalog import Catalog, Entry  # noqa: E402
from apps.toolsets import naming  # noqa: E402
from apps.toolsets.exposure import Exposed  # noqa: E402
from benchmarks import retrieval_data  # noqa: E402

EMBED_CACHE = retrieval_data.CACHE.parent / "minilm-vectors.json"
SERVER = "bfcl"


def make_catalog(tools: list[retrieval_data.Tool]) -> Catalog:
    catalog = Catalog(0, 0, 0, "dynamic", 10**9)
    # BFCL offers different functions under one name (one server could not): number the repeats.
    names: list[str] = []
    taken: set[str] = set()
    for tool in tools:
        name, n = naming.fit(tool.name), 1
        while name in taken:
            n += 1
            name = naming.fit(f"{tool.name}_{n}")
        taken.add(name)
        names.append(name)
    for i, (tool, name) in enumerate(zip(tools, names)):
        entry = {"name": name, "description": tool.description, "inputSchema": tool.parameters}
        catalog.entries[name] = Entry(
            Exposed(name, SERVER, tool.name, i, entry),
            estimate_tokens(entry),
            False,
            f"{SERVER}.{tool.name}",
        )
    return catalog


def evaluate(catalog: Catalog, queries: list[retrieval_data.Query]) -> dict[str, float]:
    position = {e.exposed.item_id: i for i, e in enumerate(catalog.entries.values())}
    totals = {"R@1": 0.0, "R@5": 0.0, "R@10": 0.0, "nDCG@10": 0.0, "all@10": 0.0}
    latencies, cpu = [], []
    for query in queries:
        start, thread = time.perf_counter(), time.thread_time()
        hits = catalog.search(query.text, 10)
        latencies.append((time.perf_counter() - start) * 1000)
        cpu.append((time.thread_time() - thread) * 1000)
        ranked = [h.entry.exposed.item_id for h in hits]
        gold = {g for g in query.gold if g in position}
        for k in (1, 5, 10):
            totals[f"R@{k}"] += len(gold & set(ranked[:k])) / len(gold)
        dcg = sum(1 / math.log2(r + 2) for r, doc in enumerate(ranked) if doc in gold)
        ideal = sum(1 / math.log2(r + 2) for r in range(min(len(gold), 10)))
        totals["nDCG@10"] += dcg / ideal
        totals["all@10"] += gold <= set(ranked)
    result = {k: 100 * v / len(queries) for k, v in totals.items()}
    result["p50"], result["p95"] = _percentiles(latencies)
    result["cpu"] = statistics.median(cpu)
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


def grow(tools: list[retrieval_data.Tool], size: int) -> list[retrieval_data.Tool]:
    """`tools`, topped up to `size` with renamed copies (same words, so the index is as dense)."""
    extra = [
        retrieval_data.Tool(f"{t.name}_v{i // len(tools) + 2}", t.description, t.parameters)
        for i, t in enumerate(tools * 2)
    ]
    return (tools + extra)[:size]


def token_savings(catalog: Catalog, queries: list[retrieval_data.Query]) -> None:
    every = sum(e.tokens for e in catalog.entries.values())
    top5 = statistics.mean(sum(h.entry.tokens for h in catalog.search(q.text, 5)) for q in queries)
    print(
        f"\ntokens: all {len(catalog.entries)} definitions {every:,}; top-5 definitions per query {top5:,.0f} "
        f"({100 * (1 - top5 / every):.2f} % fewer)"
    )


def load_vectors() -> None:
    if embeddings.available() and EMBED_CACHE.exists():
        embeddings.model().import_cache(
            {
                k: __import__("numpy").asarray(v, dtype="float32")
                for k, v in json.loads(EMBED_CACHE.read_text()).items()
            }
        )


def save_vectors() -> None:
    if embeddings.available():
        EMBED_CACHE.parent.mkdir(parents=True, exist_ok=True)
        EMBED_CACHE.write_text(
            json.dumps(
                {
                    k: [round(float(x), 6) for x in v]
                    for k, v in embeddings.model().export_cache().items()
                }
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--data",
        type=Path,
        help="a folder with the BFCL files (else downloaded into benchmarks/.cache)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="300 queries, fewer latency runs, no 500-tool endpoint"
    )
    parser.add_argument("--methods", default="bm25,embedding,hybrid")
    args = parser.parse_args()

    tools, queries = retrieval_data.load(args.data)
    if args.quick:
        queries = random.Random(14).sample(queries, 300)
    multi = sum(len(q.gold) > 1 for q in queries)
    print(
        f"BFCL @ {retrieval_data.COMMIT[:12]}: {len(tools)} tools, {len(queries)} queries ({multi} with several gold tools); "
        f"load average {os.getloadavg()[0]:.1f}; default method: {retrieval.resolve('auto')}"
    )
    methods = [m for m in args.methods.split(",") if m == "bm25" or embeddings.available()]
    load_vectors()
    catalog = make_catalog(tools)
    big = make_catalog(grow(tools, 2000))
    print(
        f"\n{'method':<10} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'nDCG@10':>8} {'all@10':>7}   "
        f"{'p50 ms (N)':>10} {'p95':>6} {'cpu':>6}   {'p50 ms (2,000)':>14} {'p95':>6}   build s"
    )
    results = {}
    for method in methods:
        start = time.perf_counter()
        discovery_catalog.index(catalog, method=method, background=False)
        built = time.perf_counter() - start
        save_vectors()
        results[method] = scores = evaluate(catalog, queries)
        discovery_catalog.index(big, method=method, background=False)
        p50, p95 = latency(big, queries, 100 if args.quick else 500)
        save_vectors()
        print(
            f"{method:<10} {scores['R@1']:6.1f} {scores['R@5']:6.1f} {scores['R@10']:6.1f} {scores['nDCG@10']:8.1f} "
            f"{scores['all@10']:7.1f}   {scores['p50']:10.2f} {scores['p95']:6.2f} {scores['cpu']:6.2f}   {p50:14.2f} {p95:6.2f}   {built:7.1f}"
        )
    if "hybrid" in results:
        best = max(results[m]["R@5"] for m in ("bm25", "embedding") if m in results)
        print(
            f"\nhybrid R@5 {results['hybrid']['R@5']:.1f} vs best single retriever {best:.1f}: "
            f"{results['hybrid']['R@5'] - best:+.1f} points (target ≥ +3)"
        )
    discovery_catalog.index(catalog, method="auto", background=False)
    token_savings(catalog, queries)
    if not args.quick:
        from benchmarks.retrieval_endpoint import static_vs_dynamic

        distinct = list({t.name: t for t in reversed(tools)}.values())[
            ::-1
        ]  # one tool per name, as one server has
        static_vs_dynamic(distinct[:500], queries)


if __name__ == "__main__":
    main()
