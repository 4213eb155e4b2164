"""/api/llm/providers/: shared + own providers, write-only keys, staff-only sharing, live model lists."""

from __future__ import annotations

import pytest

from apps.llm import services
from apps.llm.models import Provider
from tests.llm_server import ScriptedLLM

URL = "/api/llm/providers/"


@pytest.fixture
def alices_provider(alice) -> Provider:
    return services.create_provider(
        actor=alice,
        name="alice-openai",
        kind="openai",
        base_url="https://api.openai.com/v1",
        default_model="gpt-4o-mini",
        api_key="sk-alice-secret",
    )


@pytest.fixture
def shared_provider(db) -> Provider:
    return services.create_provider(
        actor=None,
        name="lm-studio",
        kind="openai",
        base_url="http://127.0.0.1:1234/v1",
        shared=True,
        is_default=True,
    )


def test_alice_creates_a_private_provider_and_never_sees_her_key_again(as_alice, alice):
    response = as_alice.post(
        URL,
        {
            "name": "claude",
            "kind": "anthropic",
            "base_url": "https://api.anthropic.com",
            "default_model": "claude-sonnet",
            "api_key": "sk-ant-very-secret",
        },
        format="json",
    )

    assert response.status_code == 201, response.content
    assert response.data["owner"] == "alice" and response.data["shared"] is False
    assert response.data["has_api_key"] is True
    assert b"very-secret" not in response.content
    assert b"very-secret" not in as_alice.get(URL).content
    assert Provider.objects.get(name="claude").api_key == "sk-ant-very-secret"


def test_charlie_never_sees_or_touches_alices_private_provider(
    as_charlie, alices_provider, shared_provider
):
    listed = as_charlie.get(URL).json()

    assert [p["name"] for p in listed["results"]] == ["lm-studio"]
    detail = f"{URL}{alices_provider.pk}/"
    assert as_charlie.get(detail).status_code == 404
    assert as_charlie.patch(detail, {"name": "mine"}, format="json").status_code == 404
    assert as_charlie.delete(detail).status_code == 404
    assert as_charlie.get(f"{detail}models/").status_code == 404
    assert Provider.objects.get(pk=alices_provider.pk).name == "alice-openai"


def test_bob_on_alices_team_does_not_see_her_private_provider_either(as_bob, team, alices_provider):
    assert as_bob.get(f"{URL}{alices_provider.pk}/").status_code == 404


def test_everyone_uses_a_shared_provider_but_only_staff_change_it(
    as_alice, as_admin, shared_provider
):
    detail = f"{URL}{shared_provider.pk}/"

    assert as_alice.get(detail).json()["editable"] is False
    assert as_alice.patch(detail, {"default_model": "x"}, format="json").status_code == 403
    assert as_alice.delete(detail).status_code == 403
    assert as_admin.patch(detail, {"default_model": "qwen3"}, format="json").status_code == 200
    assert Provider.objects.get(pk=shared_provider.pk).default_model == "qwen3"
    replaced = as_admin.put(
        detail,
        {
            "name": "lm-studio",
            "kind": "openai",
            "base_url": "http://127.0.0.1:1234/v1",
            "default_model": "gemma3",
        },
        format="json",
    )
    assert replaced.status_code == 200 and replaced.data["shared"] is True
    unshared = as_admin.patch(detail, {"shared": False}, format="json")
    assert (
        unshared.status_code == 400
        and "chosen when a provider is created" in unshared.content.decode()
    )


def test_only_staff_create_shared_providers(as_alice, as_admin):
    body = {
        "name": "team-llm",
        "kind": "openai",
        "base_url": "http://10.0.0.5:8000/v1",
        "shared": True,
    }

    assert as_alice.post(URL, body, format="json").status_code == 403
    created = as_admin.post(URL, body, format="json")
    assert (
        created.status_code == 201
        and created.data["shared"] is True
        and created.data["owner"] is None
    )


def test_omitting_the_key_keeps_it_and_an_empty_key_removes_it(as_alice, alices_provider):
    detail = f"{URL}{alices_provider.pk}/"

    as_alice.patch(detail, {"default_model": "gpt-4.1"}, format="json")
    assert Provider.objects.get(pk=alices_provider.pk).api_key == "sk-alice-secret"
    response = as_alice.patch(detail, {"api_key": ""}, format="json")
    assert response.data["has_api_key"] is False
    assert Provider.objects.get(pk=alices_provider.pk).api_key == ""


def test_bad_input_is_refused_clearly_and_changes_nothing(as_alice, alices_provider):
    bad_url = as_alice.post(
        URL, {"name": "x", "kind": "openai", "base_url": "ftp://nope"}, format="json"
    )
    bad_kind = as_alice.post(
        URL, {"name": "x", "kind": "gemini-nano", "base_url": "http://a/v1"}, format="json"
    )
    duplicate = as_alice.post(
        URL, {"name": "alice-openai", "kind": "openai", "base_url": "http://a/v1"}, format="json"
    )

    assert bad_url.status_code == 400 and "base_url" in bad_url.json()
    assert bad_kind.status_code == 400 and "kind" in bad_kind.json()
    assert (
        duplicate.status_code == 400
        and "already have a provider with this name" in duplicate.content.decode()
    )
    assert Provider.objects.count() == 1


def test_a_new_default_replaces_the_old_one(as_alice, alice, alices_provider):
    as_alice.patch(f"{URL}{alices_provider.pk}/", {"is_default": True}, format="json")
    second = as_alice.post(
        URL,
        {
            "name": "local",
            "kind": "openai",
            "base_url": "http://127.0.0.1:1234/v1",
            "is_default": True,
        },
        format="json",
    )

    assert second.status_code == 201
    assert list(
        Provider.objects.filter(owner=alice, is_default=True).values_list("name", flat=True)
    ) == ["local"]


def test_models_are_listed_live_from_the_provider(as_alice, alice):
    with ScriptedLLM(models=["qwen3-8b", "llama-3.1-8b"], api_key="k") as llm:
        good = services.create_provider(
            actor=alice, name="good", kind="openai", base_url=llm.url, api_key="k"
        )
        wrong = services.create_provider(
            actor=alice, name="wrong", kind="openai", base_url=llm.url, api_key="no"
        )

        listed = as_alice.get(f"{URL}{good.pk}/models/")
        refused = as_alice.get(f"{URL}{wrong.pk}/models/")

    assert listed.status_code == 200 and listed.json()["models"] == ["llama-3.1-8b", "qwen3-8b"]
    assert listed.json()["ok"] is True
    assert refused.status_code == 200 and refused.json()["ok"] is False
    assert (
        refused.json()["error_kind"] == "auth" and "rejected the API key" in refused.json()["error"]
    )


def test_anonymous_gets_nothing(anonymous, shared_provider):
    assert anonymous.get(URL).status_code in (401, 403)
