"""What a tool is searched by, and how text becomes search terms.

A tool's document is its exposed name split into words (`get_weather`, `getWeather` and
`server__get-weather` all say "get weather"), its description, its parameters' names and
descriptions, and its server's name and description. Terms are lowercased, stop words dropped
and stemmed (Snowball, when PyStemmer is installed), so "searching issues" meets "search_issue".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[A-Za-z0-9]+")
MAX_PARAMETERS = 30  # a huge schema must not drown the name and description
MAX_PARTS = 8  # a request's parts searched one by one (each costs a BM25 lookup and an encoding)
PART_WORDS = 3  # a shorter piece stays with the one before it ("salt and pepper")
# Where a request of several steps divides: sentence ends, new lines and list markers, then
# joining words between clauses ("…, and then …", "… and also …", "…; …").
_SENTENCE = re.compile(
    r"\s*\n\s*(?:(?:\d{1,2}[.)]|[-*•])\s+)?|(?:^|\s+)\d{1,2}[.)]\s+|^[-*•]\s+"
    r"|(?<=[^\d\s][.!?])\s+|(?<=;)\s+"
)
_CLAUSE = re.compile(
    r"(?:^|,?\s+)(?:and then|and also|and|then|also|as well as|plus|after that|afterwards)\s+", re.I
)


def split_identifier(name: str) -> str:
    """`server__getWeatherNow-v2` → `server get Weather Now v2`."""
    return " ".join(_CAMEL.sub(" ", part) for part in _WORD.findall(name))


def parameter_text(schema: Any) -> str:
    """Parameter names (split) and descriptions of a JSON schema's top-level properties."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return ""
    parts = []
    for name, spec in list(properties.items())[:MAX_PARAMETERS]:
        parts.append(split_identifier(str(name)))
        if isinstance(spec, dict) and isinstance(spec.get("description"), str):
            parts.append(spec["description"])
    return " ".join(parts)


def tool_document(
    *,
    name: str,
    description: str,
    schema: Any,
    server: str = "",
    server_description: str = "",
    title: str = "",
) -> str:
    return " \n".join(
        part
        for part in (
            split_identifier(name),
            title,
            description,
            parameter_text(schema),
            split_identifier(server),
            server_description,
        )
        if part
    )


def parts(request: str) -> list[str]:
    """The steps of a request of several (sentences, list items, clauses joined by "and",
    "then"…), at most MAX_PARTS; [] when it is one. Pieces under PART_WORDS words stay with
    the piece before them."""
    pieces: list[str] = []
    for sentence in _SENTENCE.split(request):
        merged: list[str] = []
        for clause in _CLAUSE.split(sentence or ""):
            clause = clause.strip(" ,;.")
            if not clause:
                continue
            if merged and len(clause.split()) < PART_WORDS:
                merged[-1] += f" and {clause}"
            else:
                merged.append(clause)
        pieces += merged
    return pieces[:MAX_PARTS] if len(pieces) > 1 else []


def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


@functools.cache
def _analyzer():
    """(stop words, stem function): Snowball English when PyStemmer is installed, else identity."""
    try:
        import Stemmer
    except ImportError:  # optional: terms are then matched unstemmed
        return _stopwords(), lambda words: words
    stemmer = Stemmer.Stemmer("english")
    return _stopwords(), stemmer.stemWords


def words(text: str) -> list[str]:
    """Lowercased words, identifiers split, stop words dropped (not stemmed)."""
    stop, _ = _analyzer()
    return [w for w in (m.lower() for m in _WORD.findall(_CAMEL.sub(" ", text))) if w not in stop]


def terms(text: str) -> list[str]:
    return _analyzer()[1](words(text))


def terms_of_all(texts: Iterable[str]) -> list[list[str]]:
    return [terms(text) for text in texts]
