"""The conversations API for scripts: every field optional on create, only your own conversations."""

from __future__ import annotations

import pytest

from apps.chat.models import Turn
from apps.llm.models import Provider

pytestmark = pytest.mark.django_db


@pytest.fixture
def provider(alice) -> Provider:
    return Provider.objects.create(
        name="mine",
        kind="openai",
        base_url="http://127.0.0.1:1/v1",
        default_model="m",
        owner=alice,
        is_default=True,
    )


def _auth(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_create_with_nothing_uses_alices_defaults(client, alice, alice_token, provider):
    created = client.post(
        "/api/conversations/", {}, content_type="application/json", **_auth(alice_token)
    )
    assert created.status_code == 201
    body = created.json()
    assert (body["provider"], body["endpoint"], body["running"]) == (
        provider.pk,
        alice.endpoints.get().slug,
        False,
    )

    listed = client.get("/api/conversations/", **_auth(alice_token)).json()["results"]
    assert [c["id"] for c in listed] == [body["id"]]
    Turn.objects.create(conversation_id=body["id"])
    assert (
        client.get(f"/api/conversations/{body['id']}/", **_auth(alice_token)).json()["running"]
        is True
    )


def test_alice_renames_and_deletes(client, alice_token, provider):
    conversation = client.post(
        "/api/conversations/", {"title": "a"}, content_type="application/json", **_auth(alice_token)
    ).json()
    renamed = client.patch(
        f"/api/conversations/{conversation['id']}/",
        {"title": "b"},
        content_type="application/json",
        **_auth(alice_token),
    )
    assert renamed.json()["title"] == "b"
    assert (
        client.delete(f"/api/conversations/{conversation['id']}/", **_auth(alice_token)).status_code
        == 204
    )


def test_someone_elses_provider_or_endpoint_is_refused(client, charlie, alice_token, provider):
    theirs = Provider.objects.create(
        name="theirs", kind="openai", base_url="http://127.0.0.1:1/v1", owner=charlie
    )
    for body in ({"provider": theirs.pk}, {"endpoint": charlie.endpoints.get().slug}):
        refused = client.post(
            "/api/conversations/", body, content_type="application/json", **_auth(alice_token)
        )
        assert refused.status_code == 400
    assert client.get("/api/conversations/", **_auth(alice_token)).json()["count"] == 0


def test_an_empty_message_is_refused(client, alice_token, provider):
    conversation = client.post(
        "/api/conversations/", {}, content_type="application/json", **_auth(alice_token)
    ).json()
    refused = client.post(
        f"/api/conversations/{conversation['id']}/messages/",
        {"text": ""},
        content_type="application/json",
        **_auth(alice_token),
    )
    assert refused.status_code == 400 and not Turn.objects.exists()
