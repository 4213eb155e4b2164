"""Token scopes: a token in a client's URL is no account credential, and no token mints a broader one."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts.models import AccessToken, TokenScope
from apps.accounts.services import create_access_token


def client_with(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def alice_mcp_token(alice, alice_endpoint) -> str:
    return create_access_token(user=alice, name="cursor", endpoint=alice_endpoint)[1]


@pytest.fixture
def alice_read_token(alice) -> str:
    return create_access_token(user=alice, name="dashboard script", scope=TokenScope.API_READ)[1]


@pytest.fixture
def alice_write_token(alice) -> str:
    return create_access_token(user=alice, name="provisioning script", scope=TokenScope.API_WRITE)[
        1
    ]


def test_a_token_naming_an_endpoint_is_mcp_only(alice, alice_endpoint):
    token, _ = create_access_token(user=alice, endpoint=alice_endpoint)

    assert token.scope == TokenScope.MCP
    with pytest.raises(ValueError, match="Only an MCP token"):
        create_access_token(user=alice, endpoint=alice_endpoint, scope=TokenScope.API_WRITE)


def test_alices_mcp_token_is_refused_on_the_rest_api(alice_mcp_token, alice_endpoint, alice):
    mcp = client_with(alice_mcp_token)
    other = create_access_token(user=alice, name="other", scope=TokenScope.API_READ)[0]

    assert mcp.get("/api/endpoints/").status_code == 403
    created = mcp.post("/api/tokens/", {"name": "escalate"}, format="json")
    assert created.status_code == 403
    assert "MCP endpoints only" in created.json()["detail"]
    assert mcp.delete(f"/api/tokens/{other.pk}/").status_code == 403
    assert mcp.delete(f"/api/endpoints/{alice_endpoint.slug}/").status_code == 403
    assert AccessToken.objects.filter(user=alice).count() == 2
    assert AccessToken.objects.get(pk=other.pk).revoked_at is None


def test_a_read_only_api_token_reads_but_never_writes(alice_read_token, alice_endpoint):
    reader = client_with(alice_read_token)

    assert reader.get("/api/endpoints/").status_code == 200
    assert reader.get(f"/api/endpoints/{alice_endpoint.slug}/tools/").status_code == 200
    assert reader.post("/api/tokens/", {"scope": "api_read"}, format="json").status_code == 403
    assert (
        reader.patch(
            f"/api/endpoints/{alice_endpoint.slug}/", {"name": "x"}, format="json"
        ).status_code
        == 403
    )
    assert reader.post("/api/teams/", {"name": "T", "slug": "t"}, format="json").status_code == 403


def test_a_write_token_creates_only_api_tokens_no_broader_than_itself(
    alice_write_token, alice_endpoint
):
    writer = client_with(alice_write_token)

    read = writer.post("/api/tokens/", {"scope": "api_read"}, format="json")
    assert read.status_code == 201
    assert read.json()["scope"] == "api_read"
    assert writer.post("/api/tokens/", {"scope": "api_write"}, format="json").status_code == 201
    assert (
        writer.post("/api/tokens/", {"name": "no scope asked"}, format="json").json()["scope"]
        == "api_write"
    )
    for broader in ({"scope": "full"}, {"scope": "mcp"}, {"endpoint": alice_endpoint.slug}):
        assert writer.post("/api/tokens/", broader, format="json").status_code == 403, broader


def test_an_expiring_token_cannot_create_one_that_outlives_it(alice):
    soon = timezone.now() + timedelta(hours=1)
    _, raw = create_access_token(user=alice, scope=TokenScope.API_WRITE, expires_at=soon)
    writer = client_with(raw)

    assert writer.post("/api/tokens/", {"scope": "api_read"}, format="json").status_code == 403
    later = (soon + timedelta(days=1)).isoformat()
    assert (
        writer.post(
            "/api/tokens/", {"scope": "api_read", "expires_at": later}, format="json"
        ).status_code
        == 403
    )
    earlier = (soon - timedelta(minutes=5)).isoformat()
    assert (
        writer.post(
            "/api/tokens/", {"scope": "api_read", "expires_at": earlier}, format="json"
        ).status_code
        == 201
    )


def test_an_unscoped_token_keeps_todays_rights(alice_token, alice_endpoint):
    full = client_with(alice_token)

    assert (
        full.patch(
            f"/api/endpoints/{alice_endpoint.slug}/", {"name": "Renamed"}, format="json"
        ).status_code
        == 200
    )
    created = full.post("/api/tokens/", {"endpoint": alice_endpoint.slug}, format="json")
    assert created.status_code == 201
    assert created.json()["scope"] == "mcp"


@pytest.mark.django_db(transaction=True)
def test_the_migration_makes_endpoint_tokens_mcp_only(alice, alice_endpoint):
    executor = MigrationExecutor(connection)
    before, after = [("accounts", "0003_token_rate_limit")], [("accounts", "0004_token_scopes")]
    latest = executor.loader.graph.leaf_nodes()
    executor.migrate(before)
    try:
        old = executor.loader.project_state(before).apps.get_model("accounts", "AccessToken")
        old.objects.create(
            user_id=alice.pk, prefix="scopedxxxx", digest="d", endpoint_id=alice_endpoint.pk
        )
        old.objects.create(user_id=alice.pk, prefix="unscopedxx", digest="d")

        MigrationExecutor(connection).migrate(after)

        assert AccessToken.objects.get(prefix="scopedxxxx").scope == TokenScope.MCP
        assert AccessToken.objects.get(prefix="unscopedxx").scope == TokenScope.FULL
    finally:
        # Back to the whole schema: the later migrations' tables (SSO sessions, ...) were
        # dropped with `before`, and the tests after this one need them.
        MigrationExecutor(connection).migrate(latest)


def test_the_endpoint_page_makes_mcp_or_api_tokens_and_says_which(client, alice, alice_endpoint):
    client.force_login(alice)
    page = f"/endpoints/{alice_endpoint.slug}/"

    client.post(page, {"name": "cursor"})
    shown = client.post(page, {"name": "script", "scope": "api_read"}, follow=True).content.decode()

    mcp, api = AccessToken.objects.get(name="cursor"), AccessToken.objects.get(name="script")
    assert (mcp.scope, mcp.endpoint) == (TokenScope.MCP, alice_endpoint)
    assert (api.scope, api.endpoint) == (TokenScope.API_READ, None)
    assert f"MCP: {alice_endpoint.slug}" in shown and "API read-only" in shown
