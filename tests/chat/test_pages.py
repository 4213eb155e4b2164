"""The chat page: alice's conversations and settings; charlie sees none of them."""

from __future__ import annotations

import pytest

from apps.chat import services
from apps.chat.models import Conversation
from apps.llm.models import Provider

pytestmark = pytest.mark.django_db


@pytest.fixture
def provider(alice) -> Provider:
    return Provider.objects.create(
        name="local",
        kind="openai",
        base_url="http://127.0.0.1:1/v1",
        default_model="m",
        owner=alice,
    )


def test_without_a_provider_the_page_says_how_to_add_one(client, alice):
    client.force_login(alice)
    page = client.get("/chat/").content.decode()
    assert "No LLM provider is configured" in page and "mcp_llm add" in page


def test_alice_creates_renames_and_deletes_a_conversation(client, alice, provider):
    client.force_login(alice)
    response = client.post("/chat/new/")
    conversation = Conversation.objects.get(owner=alice)
    assert response.url == f"/chat/{conversation.pk}/"
    assert conversation.provider == provider and conversation.endpoint == alice.endpoints.get()

    client.post(
        f"/chat/{conversation.pk}/settings/",
        {"title": "Trip plans", "provider": provider.pk, "model": "big", "endpoint": ""},
    )
    conversation.refresh_from_db()
    assert (conversation.title, conversation.model, conversation.endpoint) == (
        "Trip plans",
        "big",
        None,
    )
    assert "Trip plans" in client.get(f"/chat/{conversation.pk}/").content.decode()

    client.post(f"/chat/{conversation.pk}/delete/")
    assert not Conversation.objects.exists()


def test_charlie_cannot_open_or_change_alices_conversation(client, alice, charlie, provider):
    conversation = services.create_conversation(owner=alice, title="secret")
    client.force_login(charlie)
    assert client.get(f"/chat/{conversation.pk}/").status_code == 404
    assert client.post(f"/chat/{conversation.pk}/settings/", {"title": "mine"}).status_code == 404
    assert client.post(f"/chat/{conversation.pk}/delete/").status_code == 404
    assert "secret" not in client.get("/chat/").content.decode()
    conversation.refresh_from_db()
    assert conversation.title == "secret"


def test_a_conversation_cannot_use_someone_elses_provider_or_endpoint(alice, charlie):
    charlies = Provider.objects.create(
        name="c", kind="openai", base_url="http://127.0.0.1:1/v1", owner=charlie
    )
    with pytest.raises(services.ChatError):
        services.create_conversation(owner=alice, provider=charlies)
    with pytest.raises(services.ChatError):
        services.create_conversation(owner=alice, endpoint=charlie.endpoints.get())
    assert not Conversation.objects.exists()
