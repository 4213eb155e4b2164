"""Scripts authenticate with a hub token; browsers with their session; nobody else gets in."""

from __future__ import annotations

from rest_framework.test import APIClient

from apps.accounts.models import AccessToken
from apps.accounts.services import revoke_access_token


def test_a_bearer_token_authenticates_as_its_user(as_alice):
    response = as_alice.get("/api/endpoints/")

    assert response.status_code == 200
    assert [e["name"] for e in response.json()["results"]] == ["Default"]


def test_anonymous_requests_get_401_with_a_bearer_challenge(anonymous, db):
    response = anonymous.get("/api/endpoints/")

    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_wrong_token_is_refused_not_treated_as_anonymous(db):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer mcphub_aaaaaaaaaa_" + "x" * 43)

    assert client.get("/api/endpoints/").status_code == 401


def test_a_revoked_token_stops_working(alice, as_alice):
    for token in AccessToken.objects.filter(user=alice):
        revoke_access_token(token=token)

    assert as_alice.get("/api/endpoints/").status_code == 401


def test_a_signed_in_browser_session_works(client, alice):
    client.force_login(alice)

    assert client.get("/api/endpoints/").status_code == 200


def test_session_writes_need_the_csrf_token(alice):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(alice)

    response = client.post("/api/endpoints/", {"name": "work"}, format="json")

    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]
