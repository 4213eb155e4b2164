"""Activation patterns run on RE2: what RE2 cannot run (or may not: too costly) is refused where
a pattern is saved — REST API, endpoint page, admin — with the reason; what it accepts round-trips;
a pattern stored before RE2 that it refuses is skipped with a log line and shown as invalid."""

from __future__ import annotations

import logging
import time

import pytest
from django.test import Client

from apps.discovery import catalog, regex
from apps.discovery.models import MAX_PATTERNS, ActivationPattern
from apps.discovery.services import create_pattern
from tests.discovery.test_activation_patterns import _client, _url

pytestmark = pytest.mark.django_db

HOSTILE = [
    r"(a|a)+$",
    r"((a+))+$",
    r"(?:a|a)*$",
    r"(a|aa)+$",
    r"(\w|\d)+$",
    r"a*a*a*a*a*a*a*b",
    r"(x+x+)+y",
    r"(.*a){12}$",
]
EVERYDAY = [
    r"\b(issue|pull request)s?\b",
    r"deploy|release",
    r"\d{4}-\d{2}-\d{2}",
    r"https?://\S+",
    r"(?i)CAFÉ",
    r"\p{Greek}+",
    r"(?P<kind>bug|feature)",
]


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        (r"(?<=a)b", "lookbehind"),
        (r"a(?=b)", "lookahead"),
        (r"a(?!b)", "lookahead"),
        (r"(a)\1", "backreferences"),
        (r"(?P<x>a)(?P=x)", "backreferences"),
        (r"a\Z", r"\z for the end"),
        (r"a++", "possessive"),
        (r"(?>a+)b", "atomic"),
        (r"(?(1)a|b)", "conditionals"),
        (r"(?:[\s\S]){150}Z", "too costly"),
        (r"\pL+", "too costly"),
        (r"(.*){1,32000}[bc]", "counted repetition"),
        (r"(?:\p{L}|\p{N}){200}", "too costly"),
        ("(unclosed", "missing )"),
    ],
)
def test_what_re2_cannot_run_is_refused_with_the_reason(alice, pattern, words):
    endpoint = alice.endpoints.get()

    reply = _client(alice).post(
        _url(endpoint), {"pattern": pattern, "targets": ["time.now"]}, format="json"
    )

    assert reply.status_code == 400
    message = " ".join(reply.json()["pattern"])
    assert "Not a valid regular expression for RE2" in message and words in message, message
    assert endpoint.activation_patterns.count() == 0


def test_a_pattern_longer_than_500_characters_is_refused(alice):
    reply = _client(alice).post(
        _url(alice.endpoints.get()), {"pattern": "a" * 501, "targets": ["time.now"]}, format="json"
    )

    assert reply.status_code == 400 and "500 characters" in str(reply.json()["pattern"])


@pytest.mark.parametrize("pattern", HOSTILE + EVERYDAY)
def test_what_re2_runs_round_trips(alice, pattern):
    endpoint = alice.endpoints.get()
    client = _client(alice)

    created = client.post(
        _url(endpoint), {"pattern": pattern, "targets": ["time.now"]}, format="json"
    )
    listed = client.get(_url(endpoint)).json()

    assert created.status_code == 201, created.json()
    assert [(p["pattern"], p["problem"]) for p in listed] == [(pattern, "")]


def test_alice_changes_a_patterns_expression_and_a_bad_one_changes_nothing(alice):
    endpoint = alice.endpoints.get()
    client = _client(alice)
    pk = client.post(
        _url(endpoint), {"pattern": "deploy", "targets": ["ci.*"]}, format="json"
    ).json()["id"]

    changed = client.patch(
        _url(endpoint, f"{pk}/"), {"pattern": r"\brelease\b", "priority": 4}, format="json"
    )
    refused = client.patch(_url(endpoint, f"{pk}/"), {"pattern": r"(?<!pre)release"}, format="json")

    assert changed.status_code == 200 and (
        changed.json()["pattern"],
        changed.json()["priority"],
    ) == (r"\brelease\b", 4)
    assert refused.status_code == 400 and "lookbehind" in str(refused.json()["pattern"])
    assert endpoint.activation_patterns.get().pattern == r"\brelease\b"


def test_an_endpoint_holds_at_most_fifty_patterns(alice):
    endpoint = alice.endpoints.get()
    for i in range(MAX_PATTERNS):
        create_pattern(endpoint=endpoint, pattern=f"word{i}", targets=["time.now"])

    reply = _client(alice).post(
        _url(endpoint), {"pattern": "one more", "targets": ["time.now"]}, format="json"
    )

    assert reply.status_code == 400 and f"at most {MAX_PATTERNS}" in str(reply.json())
    assert endpoint.activation_patterns.count() == MAX_PATTERNS


def test_the_admin_refuses_what_re2_cannot_run(admin_client, alice):
    endpoint = alice.endpoints.get()

    page = admin_client.post(
        "/admin/discovery/activationpattern/add/",
        {
            "endpoint": endpoint.pk,
            "pattern": r"(a)\1",
            "targets": '["time.now"]',
            "priority": "0",
        },
    ).content.decode()

    assert "backreferences" in page
    assert endpoint.activation_patterns.count() == 0


def test_a_stored_pattern_re2_refuses_is_skipped_logged_and_shown_invalid(alice, caplog):
    endpoint = alice.endpoints.get()
    # Saved before patterns ran on RE2: objects.create does not validate.
    old = ActivationPattern.objects.create(
        endpoint=endpoint, pattern=r"(?<=v)\d+", targets=["time.now"], priority=9
    )
    create_pattern(endpoint=endpoint, pattern=r"\bdeploy\b", targets=["time.*"])
    browser = Client()
    browser.force_login(alice)

    with caplog.at_level(logging.WARNING, logger="apps.discovery.catalog"):
        compiled = catalog.activation_patterns(endpoint)
    listed = _client(alice).get(_url(endpoint)).json()
    page = browser.get(f"/endpoints/{endpoint.slug}/").content.decode()

    assert [targets for _, targets in compiled] == [["time.*"]]
    assert f"activation pattern {old.pk} of endpoint {endpoint.pk} skipped" in caplog.text
    assert "lookbehind" in listed[0]["problem"] and listed[1]["problem"] == ""
    assert "Invalid, never matches" in page and "lookbehind" in page


def test_patterns_see_the_first_2000_bytes_cut_between_characters():
    text = "a" + "😀" * 600  # 2,401 bytes

    seen = regex.searchable(text)

    assert (
        len(seen) <= regex.MAX_TEXT_BYTES
        and seen.decode("utf-8") == text[: 1 + (regex.MAX_TEXT_BYTES - 1) // 4]
    )
    assert regex.searchable("short") == b"short"


@pytest.mark.parametrize(
    "pattern", HOSTILE + [r"(?:a|b)*(?:[^x]){10}(?:[^x]){10}q", r"(?:.*,){12}P", r"(?:a){190}x"]
)
def test_any_accepted_pattern_costs_milliseconds_on_the_worst_text(pattern):
    compiled = regex.compile_regex(pattern)
    texts = [
        "a" * 2000,
        "a" * 1999 + "!",
        "1" * 2000,
        ("ab😀é " * 400)[:2000],
        ("a😀" * 1000)[:2000],
        ("a," * 1000),
    ]
    worst = 0.0
    for text in texts:
        started = time.thread_time()
        regex.search(compiled, regex.searchable(text))
        worst = max(worst, time.thread_time() - started)

    assert worst < 0.05  # measured ≤ 3 ms of CPU; backtracking took 10 s at 26 characters
