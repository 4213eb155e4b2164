"""The public query → tool data sets `benchmarks/retrieval.py` measures on, and how each is mapped.

Nothing of them is stored in this repository. Each file is read from `benchmarks/.cache/<set>/`
(or `--data DIR/<set>/`); a missing one is taken from a local git mirror of its repository when
there is one (`MCPHUB_BENCH_MIRROR`, default `/work/.mirror/<owner>+<name>/repo`, read with
`git show COMMIT:path`), else downloaded from raw.githubusercontent.com at the pinned commit.
Never in tests.

- `bfcl`: the Berkeley Function Calling Leaderboard (ShishirPatil/gorilla, Apache-2.0). Every
  function of every entry (FILES) is one tool, identified by (name, description), so the same
  function offered to many questions is one tool (~1,600); a query is the user turn, its gold
  tools the functions its ground truth calls (one, or several for `parallel_multiple`).
- `toollens`: ToolLens from COLT (quchangle1/COLT, CIKM 2024): 464 RapidAPI endpoints of ~300
  services, whole-task requests that need 1–3 of them together ("I'm planning a meal using beef
  and want nutrition facts"). Test split as published; the development split is drawn from its
  training queries.
- `metatool`: MetaTool (HowieHwong/MetaTool, MIT): ~20,000 single-tool requests over 199 plugins.
- `metatool2`: MetaTool's 497 two-tool requests over the same 199 plugins.

Splits: each query is in the development split (`dev`, used to tune the defaults) or held out
(`test`, reported) by a hash of its id, except ToolLens, whose own test split is the held-out one.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import subprocess
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CACHE = Path(__file__).resolve().parent / ".cache"
MIRROR = Path(os.environ.get("MCPHUB_BENCH_MIRROR", "/work/.mirror"))


@dataclass(frozen=True)
class Source:
    repo: str
    commit: str
    folder: str

    def read(self, path: str, cache: Path) -> bytes:
        """`path` (under `folder`) at the pinned commit: cached, else mirror, else download."""
        target = cache / path.replace("/", "__")
        if target.exists():
            return target.read_bytes()
        git_dir = MIRROR / self.repo.replace("/", "+") / "repo"
        full = f"{self.folder}/{path}"
        if git_dir.is_dir():
            data = subprocess.run(
                ["git", "--git-dir", str(git_dir), "show", f"{self.commit}:{full}"],
                check=True,
                capture_output=True,
            ).stdout
        else:
            url = f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{full}"
            with urllib.request.urlopen(url, timeout=60) as response:
                data = response.read()
        cache.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return data


BFCL = Source(
    "ShishirPatil/gorilla",
    "6ea57973c7a6097fd7c5915698c54c17c5b1b6c8",
    "berkeley-function-call-leaderboard/bfcl_eval/data",
)
COMMIT = BFCL.commit
FILES = (
    "BFCL_v4_simple_python",
    "BFCL_v4_multiple",
    "BFCL_v4_parallel_multiple",
    "BFCL_v4_live_simple",
    "BFCL_v4_live_multiple",
    "BFCL_v4_live_parallel_multiple",
)
COLT = Source("quchangle1/COLT", "bbec292c38cabe3fbae098f50cc31b2e9f7e8fca", "datasets/ToolLens")
METATOOL = Source("HowieHwong/MetaTool", "35e81bb7576826e980c80fed8f8c0a2b4a1e6fbb", "dataset")


@dataclass
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    server: str = ""
    server_description: str = ""


@dataclass
class Query:
    id: str
    text: str
    gold: set[int] = field(default_factory=set)
    split: str = "test"


@dataclass
class Dataset:
    name: str
    source: Source
    tools: list[Tool]
    queries: list[Query]

    def split(self, split: str) -> list[Query]:
        return [q for q in self.queries if split in ("all", q.split)]


def _dev(query_id: str, share: int = 4) -> str:
    """One query in `share` goes to the development split, by a hash of its id (stable)."""
    return "dev" if hashlib.sha256(query_id.encode()).digest()[0] % share == 0 else "test"


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.decode().splitlines() if line.strip()]


def _user_text(question: Any) -> str:
    turn = question[0] if question and isinstance(question[0], list) else question
    return " ".join(m["content"] for m in turn if isinstance(m, dict) and m.get("role") == "user")


def bfcl(cache: Path) -> Dataset:
    tools: list[Tool] = []
    ids: dict[tuple[str, str], int] = {}
    queries: list[Query] = []
    for name in FILES:
        questions = _lines(BFCL.read(f"{name}.json", cache))
        answers = _lines(BFCL.read(f"possible_answer/{name}.json", cache))
        gold_names = {a["id"]: {key for call in a["ground_truth"] for key in call} for a in answers}
        for entry in questions:
            query = Query(entry["id"], _user_text(entry["question"]), split=_dev(entry["id"]))
            for function in entry["function"]:
                key = (function["name"], function.get("description", ""))
                if key not in ids:
                    ids[key] = len(tools)
                    tools.append(Tool(function["name"], key[1], function.get("parameters") or {}))
                if function["name"] in gold_names.get(entry["id"], ()):
                    query.gold.add(ids[key])
            if query.gold and query.text:
                queries.append(query)
    return Dataset("bfcl", BFCL, tools, queries)


_TOOLBENCH = re.compile(
    r"category_name:(?P<category>.*?), tool_name:(?P<server>.*?), api_name:(?P<name>.*?), "
    r"api_description:(?P<description>.*?), required_params: (?P<required>\[.*?\]), "
    r"optional_params: (?P<optional>\[.*?\]), return_schema:",
    re.DOTALL,
)


def _toolbench_tool(text: str) -> Tool:
    """A ToolBench corpus line (`category_name:…, tool_name:…, api_name:…, …`) as an MCP tool:
    the RapidAPI service is the server, the endpoint the tool, its parameters a JSON schema."""
    match = _TOOLBENCH.match(text)
    if match is None:
        raise ValueError(f"unexpected ToolBench document: {text[:80]!r}")
    properties: dict[str, Any] = {}
    required = []
    for kind in ("required", "optional"):
        try:
            params = json.loads(match[kind])
        except json.JSONDecodeError:
            params = []
        for param in params:
            if isinstance(param, dict) and param.get("name"):
                properties[param["name"]] = {
                    "type": str(param.get("type", "string")).lower(),
                    "description": str(param.get("description") or ""),
                }
                if kind == "required":
                    required.append(param["name"])
    schema = {"type": "object", "properties": properties, "required": required}
    return Tool(
        match["name"].strip(),
        match["description"].strip(),
        schema,
        match["server"].strip(),
        f"{match['category'].strip()} API",
    )


def toollens(cache: Path) -> Dataset:
    corpus = _lines(COLT.read("corpus.jsonl", cache))
    position = {doc["_id"]: i for i, doc in enumerate(corpus)}
    tools = [_toolbench_tool(doc["text"]) for doc in corpus]
    texts = {q["_id"]: q["text"] for q in _lines(COLT.read("queries.jsonl", cache))}
    queries: dict[str, Query] = {}
    for split, path in (("test", "qrels/test.tsv"), ("dev", "qrels/train.tsv")):
        rows = csv.reader(io.StringIO(COLT.read(path, cache).decode()), delimiter="\t")
        for query_id, doc, *_ in list(rows)[1:]:
            if split == "dev" and _dev(query_id, 10) != "dev":
                continue  # a tenth of the training queries is plenty to tune on
            query = queries.setdefault(query_id, Query(query_id, texts[query_id], split=split))
            query.gold.add(position[doc])
    return Dataset("toollens", COLT, tools, list(queries.values()))


def _metatool_tools(cache: Path) -> tuple[list[Tool], dict[str, int]]:
    described = json.loads(METATOOL.read("plugin_des.json", cache))
    tools = [Tool(name, description, {}) for name, description in described.items()]
    return tools, {t.name: i for i, t in enumerate(tools)}


def metatool(cache: Path) -> Dataset:
    tools, ids = _metatool_tools(cache)
    rows = csv.DictReader(io.StringIO(METATOOL.read("data/all_clean_data.csv", cache).decode()))
    queries = [
        Query(str(n), row["Query"], {ids[row["Tool"]]}, _dev(f"metatool{n}"))
        for n, row in enumerate(rows)
        if row["Tool"] in ids and row["Query"].strip()
    ]
    return Dataset("metatool", METATOOL, tools, queries)


def metatool2(cache: Path) -> Dataset:
    tools, ids = _metatool_tools(cache)
    rows = json.loads(METATOOL.read("data/multi_tool_query_golden.json", cache))
    queries = [
        Query(str(n), row["query"], {ids[t] for t in row["tool"]}, _dev(f"metatool2-{n}"))
        for n, row in enumerate(rows)
        if all(t in ids for t in row["tool"])
    ]
    return Dataset("metatool2", METATOOL, tools, queries)


SETS: dict[str, Callable[[Path], Dataset]] = {
    "bfcl": bfcl,
    "toollens": toollens,
    "metatool": metatool,
    "metatool2": metatool2,
}


def load_set(name: str, data_dir: Path | None = None) -> Dataset:
    if name not in SETS:
        raise SystemExit(f"unknown data set {name!r}: use one of {', '.join(SETS)}")
    return SETS[name]((data_dir or CACHE) / name)


def load(data_dir: Path | None = None) -> tuple[list[Tool], list[Query]]:
    """BFCL's tools and queries (what the 500-tool endpoint benchmark uses)."""
    dataset = load_set("bfcl", data_dir)
    return dataset.tools, dataset.queries
