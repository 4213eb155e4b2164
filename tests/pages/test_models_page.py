"""The Models page: alice adds and tests her own provider, charlie never sees it, staff manage shared ones."""

from __future__ import annotations

import pytest

from apps.llm import services
from apps.llm.models import Provider
from tests.llm_server import ScriptedLLM

KEY = "sk-alice-page-secret-987"


@pytest.fixture
def alices_provider(alice) -> Provider:
    return services.create_provider(
        actor=alice,
        name="alice-openai",
        kind="openai",
        base_url="https://api.openai.com/v1",
        default_model="gpt-4o",
        api_key=KEY,
    )


@pytest.fixture
def shared(db) -> Provider:
    return services.create_provider(
        actor=None,
        name="lm-studio",
        kind="openai",
        base_url="http://127.0.0.1:1234/v1",
        shared=True,
    )


def test_alice_adds_a_provider_and_the_key_is_never_shown(client, alice):
    client.force_login(alice)

    response = client.post(
        "/models/add/",
        {
            "name": "mine",
            "kind": "anthropic",
            "base_url": "https://api.anthropic.com",
            "default_model": "claude",
            "api_key": KEY,
        },
    )
    page = client.get("/models/").content.decode()

    assert response.status_code == 302
    assert Provider.objects.get(name="mine").owner == alice
    assert "mine" in page and KEY not in page and "••••••••" in page


def test_charlie_neither_sees_nor_edits_alices_provider(client, charlie, alices_provider, shared):
    client.force_login(charlie)

    page = client.get("/models/").content.decode()

    assert "alice-openai" not in page and "lm-studio" in page
    assert client.get(f"/models/{alices_provider.pk}/edit/").status_code == 404
    assert client.post(f"/models/{alices_provider.pk}/delete/").status_code == 404
    assert client.post(f"/models/{alices_provider.pk}/test/").status_code == 404
    assert Provider.objects.filter(pk=alices_provider.pk).exists()


def test_a_user_cannot_edit_or_share_a_shared_provider(client, alice, shared):
    client.force_login(alice)

    assert client.get(f"/models/{shared.pk}/edit/").status_code == 403
    assert client.post(f"/models/{shared.pk}/delete/").status_code == 403
    client.post(
        "/models/add/",
        {"name": "sneaky", "kind": "openai", "base_url": "http://x/v1", "shared": "on"},
    )
    assert not Provider.objects.filter(name="sneaky", owner__isnull=True).exists()


def test_staff_add_a_shared_provider(client, admin_user):
    client.force_login(admin_user)

    client.post(
        "/models/add/",
        {"name": "team", "kind": "openai", "base_url": "http://10.1.2.3:8000/v1", "shared": "on"},
    )

    assert Provider.objects.get(name="team").is_shared


def test_edit_keeps_the_key_when_left_empty(client, alice, alices_provider):
    client.force_login(alice)
    form = client.get(f"/models/{alices_provider.pk}/edit/").content.decode()
    assert KEY not in form

    client.post(
        f"/models/{alices_provider.pk}/edit/",
        {
            "name": "alice-openai",
            "kind": "openai",
            "base_url": "https://api.openai.com/v1",
            "default_model": "gpt-4.1",
            "api_key": "",
        },
    )

    alices_provider.refresh_from_db()
    assert alices_provider.default_model == "gpt-4.1" and alices_provider.api_key == KEY


def test_bad_input_shows_the_error_and_changes_nothing(client, alice, alices_provider):
    client.force_login(alice)

    bad_url = client.post(
        "/models/add/", {"name": "x", "kind": "openai", "base_url": "javascript:alert(1)"}
    )
    duplicate = client.post(
        "/models/add/", {"name": "alice-openai", "kind": "openai", "base_url": "http://a/v1"}
    )

    assert bad_url.status_code == 400 and "http(s) URL" in bad_url.content.decode()
    assert (
        duplicate.status_code == 400
        and "already have a provider with this name" in duplicate.content.decode()
    )
    assert Provider.objects.count() == 1


def test_test_and_list_models_shows_the_models_or_the_clear_error(client, alice):
    client.force_login(alice)
    with ScriptedLLM(models=["qwen3-8b", "llama-3.1-8b"], api_key="k") as llm:
        good = services.create_provider(
            actor=alice,
            name="good",
            kind="openai",
            base_url=llm.url,
            api_key="k",
            default_model="qwen3-8b",
        )
        bad = services.create_provider(
            actor=alice, name="bad", kind="openai", base_url=llm.url, api_key="nope"
        )

        listed = client.post(f"/models/{good.pk}/test/").content.decode()
        refused = client.post(f"/models/{bad.pk}/test/").content.decode()

    assert "Connected: 2 model(s)" in listed and "llama-3.1-8b" in listed
    assert "rejected the API key" in refused


def test_staff_are_offered_a_detected_local_server_and_add_it(client, admin_user, settings):
    client.force_login(admin_user)
    with ScriptedLLM(models=["qwen3-8b"]) as ollama:
        settings.MCPHUB_LLM_LOCAL_SERVERS = [("Ollama", ollama.url)]

        offer = client.get("/models/detected/").content.decode()
        client.post("/models/detected/add/", {"base_url": ollama.url})
        after = client.get("/models/detected/").content.decode()

    assert "Add detected Ollama" in offer
    provider = Provider.objects.get()
    assert (provider.name, provider.is_shared, provider.default_model) == (
        "ollama",
        True,
        "qwen3-8b",
    )
    assert "Add detected" not in after


def test_users_are_not_offered_detection(client, alice, settings):
    client.force_login(alice)
    with ScriptedLLM() as ollama:
        settings.MCPHUB_LLM_LOCAL_SERVERS = [("Ollama", ollama.url)]
        assert "Add detected" not in client.get("/models/detected/").content.decode()
        assert client.post("/models/detected/add/", {"base_url": ollama.url}).status_code == 403
    assert not Provider.objects.exists()


def test_alice_ranks_her_providers_model_for_sampling_and_bad_traits_change_nothing(
    client, alice, alices_provider
):
    client.force_login(alice)
    fields = {"name": "alice-openai", "kind": "openai", "base_url": "https://api.openai.com/v1"}
    mine = '{"my-model": {"cost": 0.9, "speed": 0.8, "intelligence": 0.4}}'
    bad = '{"my-model": {"cost": 2, "speed": 0.8, "intelligence": 0.4}}'
    form = client.get(f"/models/{alices_provider.pk}/edit/").content.decode()

    saved = client.post(f"/models/{alices_provider.pk}/edit/", {**fields, "model_traits": mine})
    refused = client.post(f"/models/{alices_provider.pk}/edit/", {**fields, "model_traits": bad})
    broken = client.post(f"/models/{alices_provider.pk}/edit/", {**fields, "model_traits": "{"})

    assert "Model traits for sampling" in form
    assert saved.status_code == 302
    assert (
        refused.status_code == 400
        and "cost must be a number from 0 to 1" in refused.content.decode()
    )
    assert broken.status_code == 400 and "Enter a valid JSON" in broken.content.decode()
    alices_provider.refresh_from_db()
    assert alices_provider.model_traits == {
        "my-model": {"cost": 0.9, "speed": 0.8, "intelligence": 0.4}
    }
