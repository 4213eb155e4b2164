"""Schema-driven fuzzing (schemathesis) over every operation of the REST API: whatever a script
sends, with whichever credential, the API never answers 5xx."""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings

from apps.accounts.models import Membership, TokenScope
from apps.accounts.services import add_member, create_access_token, create_team
from apps.toolsets.services import create_preset, enable_tools


@pytest.fixture
def api_schema(db):
    # As Django's test client does: a request ending must not close the test's DB connection.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def alice_auth(alice, bob, global_server, make_tool, django_settings_override):
    """Alice with tools, a shared preset and a token: enough state for the fuzzer to reach real rows."""
    team = create_team(name="Fuzz team", slug="fuzz", owner=alice)
    add_member(team=team, user=bob, role=Membership.Role.MEMBER)
    enable_tools(endpoint=alice.endpoints.get(), tools=[make_tool(global_server, "now")])
    create_preset(owner=alice, name="fuzzed", tool_keys=["time.now"], team=team)
    _, raw = create_access_token(user=alice, name="fuzz")
    return {"Authorization": f"Bearer {raw}"}


@pytest.fixture
def django_settings_override(settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_CLASSES": []}


def fuzz_every_operation(api_schema, headers: dict[str, str], examples: int) -> list[str]:
    failures = []
    for result in api_schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(
            max_examples=examples,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def fuzz(case) -> None:
            response = case.call(headers=headers)
            if response.status_code >= 500:
                failures.append(
                    f"{case.method} {case.formatted_path} -> {response.status_code}: {case.body!r}"
                )

        fuzz()
    return failures


def test_the_api_never_answers_500(api_schema, alice_auth):
    assert fuzz_every_operation(api_schema, alice_auth, 15) == []


def test_scoped_tokens_and_staff_without_permissions_never_get_a_500_either(
    api_schema, alice_auth, alice, dave
):
    """Refusals (403 for a read-only or MCP token, for dave's writes) are answers, not crashes."""
    credentials = [
        create_access_token(user=alice, scope=TokenScope.API_READ)[1],
        create_access_token(user=alice, endpoint=alice.endpoints.get())[1],
        create_access_token(user=dave, scope=TokenScope.API_WRITE)[1],
    ]
    for raw in credentials:
        assert fuzz_every_operation(api_schema, {"Authorization": f"Bearer {raw}"}, 4) == []


# -- activation patterns -----------------------------------------------------------------

# Pieces of regular expressions: the catastrophic shapes of backtracking engines, what RE2 refuses
# (lookaround, backreferences, possessive), huge counts and classes, and plain syntax errors.
PATTERN_ATOMS = [
    "a",
    "aa",
    "b",
    ".",
    r"\w",
    r"\d",
    r"\s",
    r"\W",
    "[a-z]",
    "[^x]",
    r"[\s\S]",
    "é",
    "😀",
    r"\b",
    "^",
    "$",
    r"\p{Greek}",
    r"\pL",
    "(?i)",
    r"\1",
    "(?=a)",
    "(?<=a)",
    "(?!a)",
    "(?P=n)",
    "(",
    ")",
    "[",
    "]",
    "{",
    "|",
    "\\",
    "*",
    "+",
    "?",
    "{2,}",
    "{1000}",
    "{1,32000}",
    "*+",
    r"\Z",
    "\x00",
]
CATASTROPHIC = [
    r"(a|a)+$",
    r"((a+))+$",
    r"(?:a|a)*$",
    r"(a|aa)+$",
    r"(\w|\d)+$",
    r"a*a*a*a*a*a*a*b",
    r"(.*a){20}$",
    r"(x+x+)+y",
]
LONG_TEXTS = [
    "a" * 2000,
    "a" * 1999 + "!",
    "1" * 2000,
    ("a😀" * 1000)[:2000],
    ("ab é," * 400)[:2000],
]


def _patterns():
    from hypothesis import strategies as st

    def grow(inner):
        return st.one_of(
            st.tuples(inner, inner).map("".join),
            inner.map(lambda s: f"({s})+"),
            inner.map(lambda s: f"(?:{s})*"),
            st.tuples(inner, inner).map(lambda t: f"({t[0]}|{t[1]})"),
            st.tuples(inner, st.integers(0, 1200)).map(lambda t: f"(?:{t[0]}){{{t[1]}}}"),
            inner.map(lambda s: s + "$"),
        )

    shaped = st.recursive(st.sampled_from(PATTERN_ATOMS), grow, max_leaves=12)
    return st.one_of(
        shaped,
        st.sampled_from(CATASTROPHIC),
        st.text(max_size=80),
        st.text(alphabet="a(|)+*?{}0123456789,.$", max_size=600),
    )


def test_activation_patterns_are_saved_or_refused_clearly_and_never_make_matching_slow(alice):
    """Every pattern is 201/200 or a 400 that names the field, never a 5xx; one saved then matched
    against the longest texts costs milliseconds (backtracking once took 10 s at 26 characters)."""
    import time

    from hypothesis import strategies as st
    from rest_framework.test import APIClient

    from apps.discovery import catalog

    endpoint = alice.endpoints.get()
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {create_access_token(user=alice, name='fuzz', scope=TokenScope.API_WRITE)[1]}"
    )
    url = f"/api/endpoints/{endpoint.slug}/patterns/"
    failures, answers = [], []

    @given(pattern=_patterns(), edit=st.booleans())
    @settings(
        max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    def fuzz(pattern: str, edit: bool) -> None:
        if edit:  # through PATCH of an existing pattern instead of POST
            pk = client.post(
                url, {"pattern": "seed", "targets": ["time.now"]}, format="json"
            ).json()["id"]
            reply = client.patch(f"{url}{pk}/", {"pattern": pattern}, format="json")
        else:
            reply = client.post(url, {"pattern": pattern, "targets": ["time.now"]}, format="json")
        answers.append(reply.status_code)
        if reply.status_code >= 500 or reply.status_code not in (200, 201, 400):
            failures.append(f"{pattern!r} -> {reply.status_code}")
        elif reply.status_code == 400 and not reply.json().get("pattern"):
            failures.append(f"{pattern!r} -> 400 without a reason: {reply.json()}")
        if reply.status_code in (200, 201):
            built = catalog.build(endpoint.pk, None)
            started = time.thread_time()
            for text in LONG_TEXTS:
                built.activated(text)
            if time.thread_time() - started > 0.25:  # measured ≤ 3 ms a search
                failures.append(
                    f"{pattern!r} took {time.thread_time() - started:.3f} s of CPU over {len(LONG_TEXTS)} texts"
                )
        endpoint.activation_patterns.all().delete()

    fuzz()
    assert failures == []
    assert {200, 201, 400} <= set(answers)  # the strategy reaches acceptance and refusal alike
