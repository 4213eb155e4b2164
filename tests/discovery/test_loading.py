"""The context budget of a dynamic session, without a hub: what loading keeps, evicts and refuses."""

from __future__ import annotations

from apps.discovery.catalog import Catalog, Entry
from apps.discovery.loading import load, loaded_tokens, unload
from apps.toolsets.exposure import Exposed


def _catalog(budget: int, pinned: tuple[str, ...] = ()) -> Catalog:
    catalog = Catalog(1, 1, 1, "dynamic", budget)
    for i, name in enumerate(("a", "b", "c", "d", "big")):
        tokens = 1000 if name == "big" else 100
        catalog.entries[name] = Entry(
            Exposed(name, "s", name, i, {"name": name}), tokens, name in pinned, f"s.{name}"
        )
    return catalog


def never_called(endpoint_id, names):
    return {}


def test_loading_past_the_budget_evicts_the_least_recently_used():
    catalog = _catalog(budget=200)
    state = {"a": 1.0, "b": 2.0}

    by_load = load(catalog, state, ["c"], recency=never_called, now=3.0)
    by_call = load(catalog, state, ["c"], recency=lambda e, names: {"a": 5.0}, now=6.0)

    assert (by_load.loaded, by_load.unloaded, sorted(by_load.state)) == (["c"], ["a"], ["b", "c"])
    assert (by_call.unloaded, sorted(by_call.state)) == (["b"], ["a", "c"])


def test_pinned_tools_count_and_what_cannot_fit_is_refused_with_the_numbers():
    catalog = _catalog(budget=300, pinned=("a",))

    outcome = load(catalog, {}, ["big", "b", "a", "nope"], recency=never_called, now=1.0)

    assert outcome.loaded == ["b"] and outcome.unchanged == ["a"]
    assert (
        "needs ~1000 tokens" in outcome.errors["big"]
        and "100 taken by pinned" in outcome.errors["big"]
    )
    assert "Unknown tool: nope" in outcome.errors["nope"]
    assert loaded_tokens(catalog, outcome.state) == 200


def test_unloading_pinned_or_unknown_tools_says_why():
    catalog = _catalog(budget=500, pinned=("a",))

    outcome = unload(catalog, {"b": 1.0}, ["b", "a", "zzz"])

    assert outcome.unloaded == ["b"] and outcome.state == {}
    assert "pinned" in outcome.errors["a"] and "Unknown tool" in outcome.errors["zzz"]


def test_usage_reorders_relevant_tools_but_adds_none():
    from apps.discovery.catalog import index

    catalog = _catalog(budget=500)
    # Two equally relevant tools (named alike for BM25, which counts names: "a" is a stop word).
    for name, description in (
        ("b", "weather forecast"),
        ("c", "forecast weather"),
        ("d", "send email"),
    ):
        entry = catalog.entries[name]
        catalog.entries[name] = Entry(
            Exposed(
                name, "s", name, entry.exposed.item_id, {"name": name, "description": description}
            ),
            100,
            False,
            f"s.{name}",
        )
    index(catalog, method="bm25", background=False)
    fresh = [h.entry.name for h in catalog.search("weather forecast", 5)]
    catalog.calls = {
        catalog.entries[fresh[1]].exposed.item_id: 50,
        catalog.entries["d"].exposed.item_id: 1000,
    }
    used = [h.entry.name for h in catalog.search("weather forecast", 5)]

    assert used == [fresh[1], fresh[0]] and "d" not in used


def test_tools_called_together_with_what_a_session_holds_rank_higher():
    from apps.discovery.catalog import index

    catalog = _catalog(budget=500)
    for name in ("b", "c"):  # named alike for BM25 ("a" is a stop word)
        entry = catalog.entries[name]
        catalog.entries[name] = Entry(
            Exposed(
                name,
                "s",
                name,
                entry.exposed.item_id,
                {"name": name, "description": "weather forecast"},
            ),
            100,
            False,
            f"s.{name}",
        )
    index(catalog, method="bm25", background=False)
    alone = [h.entry.name for h in catalog.search("weather forecast", 2)]
    later = alone[1]
    catalog.co_used = {
        catalog.entries[later].exposed.item_id: {catalog.entries["d"].exposed.item_id: 50}
    }
    beside_d = [
        h.entry.name
        for h in catalog.search(
            "weather forecast", 2, beside=frozenset({catalog.entries["d"].exposed.item_id})
        )
    ]
    beside_a = [
        h.entry.name
        for h in catalog.search(
            "weather forecast", 2, beside=frozenset({catalog.entries["a"].exposed.item_id})
        )
    ]

    assert beside_d == [later, alone[0]] and beside_a == alone
