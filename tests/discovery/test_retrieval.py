"""The search behind dynamic endpoints: split names, stems, BM25 ranking, fusion, embeddings."""

from __future__ import annotations

import pytest

from apps.discovery import embeddings, retrieval, text

DOCS = [
    text.tool_document(
        name="get_weather_forecast",
        description="Forecast for a city over the next days.",
        schema={},
    ),
    text.tool_document(
        name="sendEmail",
        description="Send a message to a recipient.",
        schema={"properties": {"to": {"description": "Address"}}},
    ),
    text.tool_document(
        name="search_issues",
        description="Find issues in a repository.",
        schema={},
        server="github",
        server_description="GitHub",
    ),
]


def test_names_split_into_words_and_words_are_stemmed():
    assert text.split_identifier("server__getWeatherNow-v2") == "server get Weather Now v2"
    assert text.terms("Searching the issues") == text.terms("search issue")


def test_bm25_ranks_by_name_description_parameters_and_server():
    bm25 = retrieval.BM25(DOCS)

    assert bm25.search("weather forecasts", 3)[0][0] == 0
    assert bm25.search("emailing someone", 3)[0][0] == 1
    assert bm25.search("github", 3)[0][0] == 2
    assert bm25.search("the of and", 3) == [] and bm25.search("zzzz", 3) == []


def test_fusion_rewards_agreement():
    fused = retrieval.fuse([[(1, 9.0), (2, 5.0)], [(2, 0.9), (3, 0.8)]])

    assert [doc for doc, _ in fused] == [2, 1, 3]


def test_an_unknown_method_is_refused_clearly():
    with pytest.raises(ValueError, match="Unknown discovery method 'bogus'"):
        retrieval.resolve("bogus")


@pytest.mark.skipif(
    not embeddings.available(), reason="the optional embedding model is not installed"
)
def test_embeddings_find_meaning_without_shared_words():
    dense = retrieval.Dense(DOCS)

    assert dense.search("will it rain tomorrow", 3)[0][0] == 0
    assert retrieval.BM25(DOCS).search("will it rain tomorrow", 3) == []


@pytest.mark.skipif(
    not embeddings.available(), reason="the optional embedding model is not installed"
)
def test_vectors_are_kept_for_the_next_process(tmp_path, monkeypatch):
    store = tmp_path / "vectors.npy"
    first = retrieval.Dense(DOCS, store=store)
    monkeypatch.setattr(
        embeddings.Cached, "encode", lambda *a, **k: pytest.fail("encoded again"), raising=True
    )
    second = retrieval.Dense(DOCS, store=store)

    assert store.exists()
    assert (second.matrix == first.matrix).all()


def test_a_request_of_several_steps_is_split_into_its_parts():
    assert text.parts("get the weather in Paris and then email it to Bob") == [
        "get the weather in Paris",
        "email it to Bob",
    ]
    assert text.parts("1. find the open issues\n2. post a summary to the team channel") == [
        "find the open issues",
        "post a summary to the team channel",
    ]
    assert text.parts("Book a flight to Rome. Reserve a hotel there; convert 100 USD to EUR") == [
        "Book a flight to Rome",
        "Reserve a hotel there",
        "convert 100 USD to EUR",
    ]
    # One request stays whole; a short piece ("salt and pepper") stays with its clause.
    assert text.parts("add two numbers") == []
    assert text.parts("find recipes with salt and pepper") == []


def test_scores_are_combined_standardised_and_either_method_may_be_missing():
    import numpy as np

    lexical, dense = np.array([0.0, 1.0, 9.0, 0.0]), np.array([0.2, 0.6, 0.1, 0.3])

    assert retrieval.combine(None, None) is None
    assert retrieval.combine(lexical, None).argmax() == 2
    assert retrieval.combine(None, dense).argmax() == 1
    # What counts is how far above the rest a tool is, not the scale of a method's scores.
    both = retrieval.combine(lexical, dense)
    assert np.allclose(retrieval.combine(lexical * 40, dense), both)
    assert both.argmax() == 1  # liked by both


@pytest.mark.skipif(
    not embeddings.available(), reason="the optional embedding model is not installed"
)
def test_a_task_of_two_steps_finds_a_tool_for_each():
    hybrid = retrieval.build("hybrid", [retrieval.Document(d, d) for d in DOCS])

    found = [doc for doc, _ in hybrid.search("find the issues in my repo and email them", 2)]

    assert sorted(found) == [1, 2]


def test_several_queries_at_once_are_searched_as_the_parts_of_one_request():
    from apps.discovery.catalog import Catalog, Entry, index
    from apps.toolsets.exposure import Exposed

    catalog = Catalog(0, 0, 0, "dynamic", 10**6)
    for i, (name, description) in enumerate(
        [
            ("get_weather_forecast", "Forecast for a city over the next days."),
            ("send_email", "Send a message to a recipient."),
            ("search_issues", "Find issues in a repository."),
        ]
    ):
        entry = {"name": name, "description": description, "inputSchema": {}}
        catalog.entries[name] = Entry(Exposed(name, "s", name, i, entry), 10, False, f"s.{name}")
    index(catalog, method="bm25", background=False)

    found = {hit.entry.name for hit in catalog.search(["weather forecast", "email someone"], 2)}

    assert found == {"get_weather_forecast", "send_email"}


def test_the_query_vector_is_moved_towards_its_nearest_tools():
    """Pseudo-relevance feedback: of two tools equally far from the query, the one described
    like the query's nearest tools ranks first; asked plainly, they tie (Catalog.similar)."""
    import numpy as np

    def unit(*axes: int):
        vector = np.zeros(embeddings.DIM, dtype=np.float32)
        vector[list(axes)] = 1.0
        return vector / np.linalg.norm(vector)

    vectors = {
        "the query": unit(0),
        "nearest": unit(0),
        "near, and like the unasked one": unit(0, 1),
        "near too": unit(0, 1, 3),
        "unasked, like the near ones": unit(1),
        "unasked, like nothing": unit(2),
    }

    class Encoder:
        def encode(self, texts, *, remember=True):
            return np.stack([vectors[t] for t in texts])

    documents = list(vectors)[1:]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(embeddings, "encoder", Encoder)
        dense = retrieval.Dense(documents)
        (plain,) = dense.scores(["the query"], feedback=False)
        (moved,) = dense.scores(["the query"])
        found = [i for i, _ in dense.search("the query", 5)]

    assert plain[3] == plain[4] == 0.0
    assert moved[3] > moved[4]
    assert found == [0, 1, 2, 3]  # search ranks by the moved vector; nothing near the last
