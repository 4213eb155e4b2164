"""The searchable catalog of one endpoint: every tool its owner may enable, named and indexed.

Built from the database when the endpoint's version moves (a toggle, a mode or naming change,
a catalog change: see signals.py) and cached per process; the search index inside is rebuilt
only when the documents themselves changed, never per query.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TypeVar

from django.conf import settings
from django.db.models import Count, Max
from django.utils import timezone

from apps.accounts.models import Membership
from apps.catalog.models import McpServer, Tool
from apps.catalog.selectors import visible_servers
from apps.connections.specs import ServerSpec
from apps.core.singleflight import single_flight
from apps.credentials.errors import CredentialsMissing
from apps.credentials.selectors import specs_for_user
from apps.discovery import embeddings, regex, retrieval, text
from apps.discovery.models import MAX_PATTERNS, ActivationPattern, LearnedSearch
from apps.toolsets import naming
from apps.toolsets.exposure import Exposed, candidate, keep_names, tool_entry
from apps.toolsets.models import Endpoint, EndpointTool, ToolCall

logger = logging.getLogger(__name__)
T = TypeVar("T")

USAGE_DAYS = 30
USAGE_WEIGHT = (
    0.05  # 1 call: +3.5 %, 100 calls: +23 % — enough to break near-ties, not to override relevance
)
CO_USE_SECONDS = 600
CO_USE_CALLS = 5000
CO_USE_WINDOW = (
    20  # calls after each one looked at: a burst of calls must not cost n² at build time
)
PRIOR_DEPTH = 10  # extra hits considered so a used tool just below the cut can move up
# Searches that led to loads (discovery.LearnedSearch): a later search sharing at least
# LEARN_OVERLAP of its terms (Jaccard) with one of them ranks the tools it loaded higher.
LEARN_WEIGHT = 0.2
LEARN_OVERLAP = 0.5
LEARNED_ROWS = 2000  # the most recent kept per endpoint
# Query encoding is ~5-20 ms of CPU: never on the event loop. Its own small pool, so a burst of
# searches queues here instead of filling the loop's default executor (ORM calls wait there), and
# takes at most MCPHUB_SEARCH_THREADS cores (by default all but one: the loop keeps a core).
_search_threads = ThreadPoolExecutor(
    settings.MCPHUB_SEARCH_THREADS, thread_name_prefix="mcphub-search"
)


@dataclass(frozen=True)
class Entry:
    """One searchable tool: how clients see it, its cost in tokens, and whether it is pinned
    (enabled on the endpoint, so always listed)."""

    exposed: Exposed
    tokens: int
    pinned: bool
    key: str
    server_description: str = ""

    @property
    def name(self) -> str:
        return self.exposed.name

    @property
    def description(self) -> str:
        return self.exposed.entry.get("description") or ""


@dataclass(frozen=True)
class Hit:
    entry: Entry
    score: float


@dataclass
class Catalog:
    endpoint_id: int
    owner_id: int
    version: object
    mode: str
    token_budget: int
    entries: dict[str, Entry] = field(default_factory=dict)
    specs: dict[str, ServerSpec] = field(default_factory=dict)
    missing: dict[str, CredentialsMissing] = field(default_factory=dict)  # see EndpointView.missing
    fingerprint: str = ""
    retriever: retrieval.Retriever | None = None
    lexical: retrieval.Retriever | None = None  # BM25 alone, for pages that show every match
    patterns: list[tuple[regex.Regex, list[str]]] = field(
        default_factory=list
    )  # activation: (RE2, targets)
    calls: dict[int, int] = field(default_factory=dict)  # tool id → calls on this endpoint lately
    co_used: dict[int, dict[int, int]] = field(
        default_factory=dict
    )  # tool id → tool id → times called together
    learned: list[tuple[frozenset[str], int, int]] = field(
        default_factory=list
    )  # (a search's terms, a tool it led to, how often)

    @property
    def pinned(self) -> list[Entry]:
        return [e for e in self.entries.values() if e.pinned]

    @property
    def pinned_tokens(self) -> int:
        return sum(e.tokens for e in self.entries.values() if e.pinned)

    def activated(self, text: str) -> list[str]:
        """Exposed names the activation patterns matching `text` name, highest priority first.

        Up to MAX_PATTERNS × ~3 ms at worst (apps/discovery/regex.py): call it off the event loop."""
        data = regex.searchable(text)
        names: list[str] = []
        for compiled, targets in self.patterns:
            if regex.search(compiled, data):
                names += [e.name for target in targets for e in self._targeted(target)]
        return list(dict.fromkeys(names))

    def _targeted(self, target: str) -> list[Entry]:
        server, _, tool = target.partition(".")
        return [
            e
            for e in self.entries.values()
            if e.exposed.server == server and tool in ("*", e.exposed.backend_name)
        ]

    def search(
        self,
        query: str | Sequence[str],
        limit: int,
        *,
        lexical: bool = False,
        beside: frozenset[int] = frozenset(),
    ) -> list[Hit]:
        """The best `limit` tools for `query` (or several queries at once: searched as the parts
        of one request); among relevant ones, tools used here lately, and tools often called
        together with those `beside` (tool ids a session holds), and tools that searches like
        this one led to, rank a little higher (a prior: it reorders what matched, it never adds
        what did not)."""
        retriever = self.lexical if lexical else self.retriever
        if retriever is None:
            return []
        if not isinstance(query, str):
            query = "\n".join(query)  # one part per line (text.parts)
        order = list(self.entries.values())
        learned = self._learned(query)
        hits = [
            Hit(order[i], score * self._prior(order[i], beside, learned))
            for i, score in retriever.search(query, limit + PRIOR_DEPTH)
        ]
        hits.sort(key=lambda hit: -hit.score)
        return [Hit(hit.entry, round(hit.score, 4)) for hit in hits[:limit]]

    def similar(self, query: str, threshold: float) -> set[int]:
        """Tool ids whose embedding is at least `threshold` (cosine) from `query`'s: "means the
        same" where no word is shared. Empty while vectors are being computed, or without them."""
        dense = getattr(self.retriever, "dense", self.retriever)
        if not isinstance(dense, retrieval.Dense) or not dense.ready.is_set():
            return set()
        (scores,) = dense.scores([query], feedback=False)
        if scores is None:
            return set()
        order = list(self.entries.values())
        return {order[i].exposed.item_id for i in (scores >= threshold).nonzero()[0]}

    async def asearch(self, query: str, limit: int, **options) -> list[Hit]:
        """`search` from async code: run in a search thread, the event loop stays free."""
        return await off_loop(functools.partial(self.search, query, limit, **options))

    def _prior(self, entry: Entry, beside: frozenset[int], learned: dict[int, float]) -> float:
        calls = self.calls.get(entry.exposed.item_id, 0)
        together = self.co_used.get(entry.exposed.item_id, {})
        paired = sum(together.get(other, 0) for other in beside)
        return (
            1.0
            + USAGE_WEIGHT * (math.log1p(calls) + math.log1p(paired))
            + LEARN_WEIGHT * math.log1p(learned.get(entry.exposed.item_id, 0.0))
        )

    def _learned(self, query: str) -> dict[int, float]:
        """Tool id → how strongly searches like `query` led to it (Σ count × overlap)."""
        if not self.learned:
            return {}
        asked = frozenset(text.terms(query))
        found: dict[int, float] = {}
        for terms, tool_id, count in self.learned:
            overlap = len(asked & terms) / len(asked | terms) if asked else 0.0
            if overlap >= LEARN_OVERLAP:
                found[tool_id] = found.get(tool_id, 0.0) + count * overlap
        return found


async def off_loop(function: Callable[..., T], *args) -> T:
    """`function(*args)` in a search thread (searching encodes the query: CPU, not I/O)."""
    return await asyncio.get_running_loop().run_in_executor(_search_threads, function, *args)


def build(endpoint_id: int, version: object) -> Catalog | None:
    """Read the catalog for one endpoint (sync ORM: call from a thread)."""
    endpoint = Endpoint.objects.select_related("owner").filter(pk=endpoint_id).first()
    if endpoint is None:
        return None
    servers = {s.pk: s for s in visible_servers(endpoint.owner).filter(enabled=True)}
    tools = list(
        Tool.objects.filter(server_id__in=servers, available=True).order_by("server__name", "name")
    )
    enabled = {
        et.tool_id: et
        for et in EndpointTool.objects.filter(endpoint=endpoint, tool_id__in=[t.pk for t in tools])
    }
    # Enabled tools keep the names clients saw; the rest name themselves around them.
    candidates = [
        candidate(servers[tool.server_id].name, tool.name, enabled.get(tool.pk)) for tool in tools
    ]
    names = naming.assign(candidates, endpoint.naming_strategy)
    pinned = [(enabled[tool.pk], name) for tool, name in zip(tools, names) if tool.pk in enabled]
    keep_names([et for et, _ in pinned], [name for _, name in pinned])
    catalog = Catalog(endpoint.pk, endpoint.owner_id, version, endpoint.mode, endpoint.token_budget)
    for tool, name in zip(tools, names):
        server = servers[tool.server_id]
        override = getattr(enabled.get(tool.pk), "description_override", "")
        exposed = Exposed(
            name,
            server.name,
            tool.name,
            tool.pk,
            tool_entry(tool, name, override),
            tool.token_estimate,
        )
        catalog.entries[name] = Entry(
            exposed,
            tool.token_estimate,
            tool.pk in enabled,
            f"{server.name}.{tool.name}",
            server.description,
        )
    catalog.specs, catalog.missing = specs_for_user(servers.values(), endpoint.owner_id)
    catalog.patterns = activation_patterns(endpoint)
    catalog.calls = usage(endpoint.pk)
    catalog.co_used = co_use(endpoint.pk)
    catalog.learned = learned_searches(endpoint.pk)
    return catalog


def learned_searches(endpoint_id: int) -> list[tuple[frozenset[str], int, int]]:
    rows = LearnedSearch.objects.filter(endpoint_id=endpoint_id).order_by("-last_at")
    return [
        (frozenset(terms.split()), tool_id, count)
        for terms, tool_id, count in rows.values_list("terms", "tool_id", "count")[:LEARNED_ROWS]
    ]


def activation_patterns(endpoint: Endpoint) -> list[tuple[regex.Regex, list[str]]]:
    """The endpoint's activation patterns compiled, highest priority first. One saved before
    patterns ran on RE2 that RE2 refuses is skipped (its owner sees it marked invalid)."""
    compiled = []
    for row in ActivationPattern.objects.filter(endpoint=endpoint)[:MAX_PATTERNS]:
        try:
            compiled.append((regex.compile_regex(row.pattern), row.targets))
        except regex.RegexRefused as exc:
            logger.warning(
                "activation pattern %s of endpoint %s skipped: %s", row.pk, endpoint.pk, exc
            )
    return compiled


def co_use(endpoint_id: int) -> dict[int, dict[int, int]]:
    """How often two tools were called within CO_USE_SECONDS of each other by the same user on
    the endpoint (the call log keeps no session id: closeness in time stands for "one task"),
    over its last CO_USE_CALLS calls."""
    rows = list(
        ToolCall.objects.filter(endpoint_id=endpoint_id, tool_id__isnull=False)
        .order_by("-started_at")
        .values_list("user_id", "tool_id", "started_at")[:CO_USE_CALLS]
    )
    rows.reverse()
    pairs: dict[int, dict[int, int]] = {}
    for i, (user, tool, when) in enumerate(rows):
        for other_user, other, other_when in rows[i + 1 : i + 1 + CO_USE_WINDOW]:
            if (other_when - when).total_seconds() > CO_USE_SECONDS:
                break
            if other_user == user and other != tool:
                for a, b in ((tool, other), (other, tool)):
                    pairs.setdefault(a, {})[b] = pairs.get(a, {}).get(b, 0) + 1
    return pairs


def usage(endpoint_id: int) -> dict[int, int]:
    """Calls per tool on the endpoint over the last USAGE_DAYS (one aggregate over the call log)."""
    since = timezone.now() - timedelta(days=USAGE_DAYS)
    rows = ToolCall.objects.filter(
        endpoint_id=endpoint_id, started_at__gte=since, tool_id__isnull=False
    )
    return dict(rows.values_list("tool_id").annotate(n=Count("id")).values_list("tool_id", "n"))


def documents(entries: list[Entry]) -> list[retrieval.Document]:
    return [document(e) for e in entries]


def document(entry: Entry) -> retrieval.Document:
    """The tool's whole text (name, title, description, parameters' names and descriptions,
    server and its description) and its gist (name, title, description, parameters' names):
    see retrieval.Document."""
    tool = entry.exposed.entry
    schema = tool.get("inputSchema")
    full = text.tool_document(
        name=entry.name,
        title=tool.get("title", ""),
        description=entry.description,
        schema=schema,
        server=entry.exposed.server,
        server_description=entry.server_description,
    )
    properties = schema.get("properties") if isinstance(schema, dict) else None
    params = (
        " ".join(text.split_identifier(str(p)) for p in properties)
        if isinstance(properties, dict)
        else ""
    )
    gist = " ".join(
        part
        for part in (
            text.split_identifier(entry.name),
            tool.get("title", ""),
            entry.description,
            params,
        )
        if part
    )
    return retrieval.Document(full, gist, text.split_identifier(entry.name))


# -- the per-process cache -----------------------------------------------------------

# Safety net for changes no event announces (e.g. a team membership): catalogs expire anyway,
# and an expired one reuses its index when the documents did not change.
CATALOG_MAX_AGE = 60.0
_catalogs: dict[int, tuple[float, Catalog]] = {}
_indexes: dict[str, retrieval.Retriever] = {}
_fresh: dict[int, tuple[float, tuple, Catalog | None]] = {}


def index(catalog: Catalog, *, method: str | None = None, background: bool = True) -> Catalog:
    """Attach the retrievers to `catalog` (the method's, and BM25 alone), reusing those built
    for the same documents."""
    docs = documents(list(catalog.entries.values()))
    digest = hashlib.sha256(f"{embeddings.MAX_TOKENS} {retrieval.DENSE_VIEWS}\2".encode())
    for doc in docs:
        # (doc.name is the start of doc.full: no need to hash it again)
        digest.update(doc.full.encode() + b"\0" + doc.gist.encode() + b"\1")
    catalog.fingerprint = digest.hexdigest()
    method = retrieval.resolve(method or settings.MCPHUB_DISCOVERY_METHOD)
    catalog.lexical = _retriever("bm25", catalog.fingerprint, docs, background)
    catalog.retriever = (
        catalog.lexical
        if method == "bm25"
        else _retriever(method, catalog.fingerprint, docs, background)
    )
    return catalog


def _retriever(
    method: str, fingerprint: str, docs: list[retrieval.Document], background: bool
) -> retrieval.Retriever:
    key = f"{method}:{fingerprint}"
    retriever = _indexes.get(key)
    if retriever is None:
        if method == "hybrid":  # share the BM25 half with the lexical retriever
            retriever = retrieval.Hybrid(
                _retriever("bm25", fingerprint, docs, background),
                _retriever("embedding", fingerprint, docs, background),
            )
        else:
            store = (
                settings.DATA_DIR / "discovery" / f"{fingerprint}.npy"
                if method == "embedding"
                else None
            )
            retriever = retrieval.build(method, docs, background=background, store=store)
        if len(_indexes) > 256:
            _indexes.clear()  # bounded: a churn of catalogs cannot grow memory
        _indexes[key] = retriever
    return retriever


def _build_indexed(endpoint_id: int, version: object) -> Catalog | None:
    catalog = build(endpoint_id, version)
    return index(catalog) if catalog is not None else None


def fresh(endpoint_id: int) -> Catalog | None:
    """The endpoint's catalog for sync code (pages, API), as the database says it is now.

    Cached per process under a signature of what it is built from (a few aggregate queries),
    since building one over 2,000 tools costs far more than checking whether anything changed.
    """
    signature = _signature(endpoint_id)
    cached = _fresh.get(endpoint_id)
    now = time.monotonic()
    if cached is not None and cached[1] == signature and now - cached[0] < CATALOG_MAX_AGE:
        return cached[2]
    catalog = _build_indexed(endpoint_id, version=None)
    if len(_fresh) > 1000:
        _fresh.clear()
    _fresh[endpoint_id] = (now, signature, catalog)
    return catalog


def _signature(endpoint_id: int) -> tuple:
    endpoint = (
        Endpoint.objects.filter(pk=endpoint_id)
        .values_list("owner_id", "updated_at", "created_at")
        .first()
    )
    if endpoint is None:
        return ()
    return (
        endpoint,
        tuple(
            Tool.objects.filter(available=True)
            .aggregate(n=Count("id"), last=Max("last_seen_at"), top=Max("id"))
            .values()
        ),
        tuple(McpServer.objects.aggregate(n=Count("id"), last=Max("updated_at")).values()),
        tuple(
            EndpointTool.objects.filter(endpoint_id=endpoint_id)
            .aggregate(n=Count("id"), top=Max("id"))
            .values()
        ),
        tuple(
            Membership.objects.filter(user_id=endpoint[0])
            .aggregate(n=Count("id"), top=Max("id"))
            .values()
        ),
        tuple(
            ActivationPattern.objects.filter(endpoint_id=endpoint_id)
            .aggregate(n=Count("id"), top=Max("id"))
            .values()
        ),
    )


async def current(endpoint_id: int, version: object) -> Catalog | None:
    """The endpoint's catalog at `version`, built at most once per version per process."""
    cached = _catalogs.get(endpoint_id)
    now = time.monotonic()
    if cached is not None and cached[1].version == version and now - cached[0] < CATALOG_MAX_AGE:
        return cached[1]
    catalog = await single_flight(
        "discovery", (endpoint_id, version), functools.partial(_build_indexed, endpoint_id, version)
    )
    if catalog is not None:
        _catalogs[endpoint_id] = (now, catalog)
    return catalog


def forget() -> None:
    _catalogs.clear()
    _indexes.clear()
    _fresh.clear()
