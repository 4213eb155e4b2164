"""The public query → tool dataset `benchmarks/retrieval.py` measures on, and how it is mapped.

Source: the Berkeley Function Calling Leaderboard (BFCL) data in ShishirPatil/gorilla, commit
COMMIT, folder `berkeley-function-call-leaderboard/bfcl_eval/data/`, licence Apache-2.0
(https://github.com/ShishirPatil/gorilla/blob/main/LICENSE). Nothing of it is stored in this
repository: the files are downloaded at run time into `benchmarks/.cache/bfcl/` (or read from
`--data DIR`), never in tests.

Mapping: every function of every entry (FILES, question file + `possible_answer/` file) is one
tool, identified by (name, description) so the same function offered to many questions is one
tool; the catalog is the union (~1,600 tools). A query is the user turn's text; its gold tools
are the entry's functions named in its ground truth (one, or several for `parallel_multiple`).
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

COMMIT = "6ea57973c7a6097fd7c5915698c54c17c5b1b6c8"
BASE = f"https://raw.githubusercontent.com/ShishirPatil/gorilla/{COMMIT}/berkeley-function-call-leaderboard/bfcl_eval/data"
FILES = (
    "BFCL_v4_simple_python",
    "BFCL_v4_multiple",
    "BFCL_v4_parallel_multiple",
    "BFCL_v4_live_simple",
    "BFCL_v4_live_multiple",
    "BFCL_v4_live_parallel_multiple",
)
CACHE = Path(__file__).resolve().parent / ".cache" / "bfcl"


@dataclass
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass
class Query:
    id: str
    text: str
    gold: set[int] = field(default_factory=set)


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _fetch(name: str, data_dir: Path | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    folder = data_dir or CACHE
    question, answer = folder / f"{name}.json", folder / f"{name}.answer.json"
    if not (question.exists() and answer.exists()):
        if data_dir is not None:
            raise SystemExit(f"{question} or {answer} is missing")
        folder.mkdir(parents=True, exist_ok=True)
        for url, target in (
            (f"{BASE}/{name}.json", question),
            (f"{BASE}/possible_answer/{name}.json", answer),
        ):
            with urllib.request.urlopen(url, timeout=60) as response:
                target.write_bytes(response.read())
    return _read(question), _read(answer)


def _user_text(question: Any) -> str:
    turn = question[0] if question and isinstance(question[0], list) else question
    return " ".join(m["content"] for m in turn if isinstance(m, dict) and m.get("role") == "user")


def load(data_dir: Path | None = None) -> tuple[list[Tool], list[Query]]:
    tools: list[Tool] = []
    ids: dict[tuple[str, str], int] = {}
    queries: list[Query] = []
    for name in FILES:
        questions, answers = _fetch(name, data_dir)
        gold_names = {a["id"]: {key for call in a["ground_truth"] for key in call} for a in answers}
        for entry in questions:
            query = Query(entry["id"], _user_text(entry["question"]))
            for function in entry["function"]:
                key = (function["name"], function.get("description", ""))
                if key not in ids:
                    ids[key] = len(tools)
                    tools.append(Tool(function["name"], key[1], function.get("parameters") or {}))
                if function["name"] in gold_names.get(entry["id"], ()):
                    query.gold.add(ids[key])
            if query.gold and query.text:
                queries.append(query)
    return tools, queries
