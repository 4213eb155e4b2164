"""Tokens: shown once, listed by prefix, revocable; teams: members see their own."""

from __future__ import annotations

from rest_framework.test import APIClient

from apps.accounts.models import AccessToken


def test_a_new_token_is_returned_once_and_works(as_alice, alice_endpoint):
    response = as_alice.post(
        "/api/tokens/", {"name": "cursor", "endpoint": alice_endpoint.slug}, format="json"
    )

    assert response.status_code == 201
    raw = response.json()["token"]
    assert raw.startswith(f"mcphub_{response.json()['prefix']}_")
    listed = as_alice.get("/api/tokens/").json()["results"]
    assert raw not in str(listed)
    assert {t["name"]: t["endpoint"] for t in listed}["cursor"] == alice_endpoint.slug
    assert response.json()["scope"] == "mcp"
    fresh = APIClient()
    fresh.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert fresh.get("/api/endpoints/").status_code == 403  # an endpoint's token is for MCP only
    api = as_alice.post(
        "/api/tokens/", {"name": "script", "scope": "api_read"}, format="json"
    ).json()["token"]
    fresh.credentials(HTTP_AUTHORIZATION=f"Bearer {api}")
    assert fresh.get("/api/endpoints/").status_code == 200


def test_revoking_a_token_keeps_its_row_and_stops_it(as_alice, alice):
    created = as_alice.post("/api/tokens/", {"name": "old"}, format="json").json()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {created['token']}")

    assert as_alice.delete(f"/api/tokens/{created['id']}/").status_code == 204

    assert client.get("/api/endpoints/").status_code == 401
    assert AccessToken.objects.get(pk=created["id"]).revoked_at is not None
    assert as_alice.get(f"/api/tokens/{created['id']}/").json()["is_active"] is False


def test_a_token_cannot_be_scoped_to_someone_elses_endpoint(as_bob, alice_endpoint):
    response = as_bob.post(
        "/api/tokens/", {"name": "x", "endpoint": alice_endpoint.slug}, format="json"
    )

    assert response.status_code == 400
    assert "endpoint" in response.json()


def test_token_input_is_validated(as_alice):
    response = as_alice.post(
        "/api/tokens/", {"name": "x" * 101, "expires_at": "soon"}, format="json"
    )

    assert response.status_code == 400
    assert {"name", "expires_at"} <= response.json().keys()


def test_nobody_sees_or_revokes_alices_tokens(as_alice, as_bob, as_charlie, alice, team):
    token = AccessToken.objects.filter(user=alice).first()

    for client in (as_bob, as_charlie):
        assert client.get(f"/api/tokens/{token.pk}/").status_code == 404
        assert client.delete(f"/api/tokens/{token.pk}/").status_code == 404
        assert token.prefix not in str(client.get("/api/tokens/").json())
    assert AccessToken.objects.get(pk=token.pk).revoked_at is None


def test_anonymous_cannot_create_tokens(anonymous, db):
    assert anonymous.post("/api/tokens/", {"name": "x"}, format="json").status_code == 401


def test_members_see_their_team_and_charlie_does_not(as_bob, as_charlie, team):
    body = as_bob.get("/api/teams/").json()["results"]

    assert [t["slug"] for t in body] == ["alices-team"]
    assert {m["username"]: m["role"] for m in body[0]["members"]} == {
        "alice": "owner",
        "bob": "member",
    }
    assert as_charlie.get("/api/teams/").json()["results"] == []
    assert as_charlie.get(f"/api/teams/{team.slug}/").status_code == 404


def test_creating_a_team_makes_you_its_owner(as_charlie, team):
    response = as_charlie.post(
        "/api/teams/", {"name": "Charlie's", "slug": "charlies"}, format="json"
    )

    assert response.status_code == 201
    assert response.json()["members"] == [{"username": "charlie", "role": "owner"}]
    assert (
        as_charlie.post(
            "/api/teams/", {"name": "Dup", "slug": team.slug}, format="json"
        ).status_code
        == 400
    )
