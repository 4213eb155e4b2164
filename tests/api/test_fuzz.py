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
        @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def fuzz(case) -> None:
            response = case.call(headers=headers)
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path} -> {response.status_code}: {case.body!r}")

        fuzz()
    return failures


def test_the_api_never_answers_500(api_schema, alice_auth):
    assert fuzz_every_operation(api_schema, alice_auth, 15) == []


def test_scoped_tokens_and_staff_without_permissions_never_get_a_500_either(api_schema, alice_auth, alice, dave):
    """Refusals (403 for a read-only or MCP token, for dave's writes) are answers, not crashes."""
    credentials = [
        create_access_token(user=alice, scope=TokenScope.API_READ)[1],
        create_access_token(user=alice, endpoint=alice.endpoints.get())[1],
        create_access_token(user=dave, scope=TokenScope.API_WRITE)[1],
    ]
    for raw in credentials:
        assert fuzz_every_operation(api_schema, {"Authorization": f"Bearer {raw}"}, 4) == []
