"""LLM providers in the admin: the API key is write-only (never on the page), kept, replaced or removed."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.llm import services
from apps.llm.models import Provider
from tests.admin.browser import form_data, submit
from tests.llm_server import ScriptedLLM

KEY = "sk-admin-very-secret-0123456789"


@pytest.fixture
def openai(db) -> Provider:
    return services.create_provider(
        actor=None,
        name="openai",
        kind="openai",
        base_url="https://api.openai.com/v1",
        default_model="gpt-4o-mini",
        api_key=KEY,
        shared=True,
    )


@pytest.fixture
def change_url(openai) -> str:
    return reverse("admin:llm_provider_change", args=[openai.pk])


def test_change_page_never_shows_the_key(admin_client, change_url):
    html = admin_client.get(change_url).content.decode()

    assert KEY not in html and "very-secret" not in html
    assert form_data(html)["api_key"] == ""
    assert "stored; type to replace" in html


def test_saving_without_typing_a_key_keeps_it(admin_client, change_url, openai):
    response = submit(admin_client, change_url, {"default_model": "gpt-4.1"})

    assert response.status_code == 302
    openai.refresh_from_db()
    assert openai.default_model == "gpt-4.1" and openai.api_key == KEY


def test_a_typed_key_replaces_it_and_the_box_removes_it(admin_client, change_url, openai):
    submit(admin_client, change_url, {"api_key": "sk-new"})
    openai.refresh_from_db()
    assert openai.api_key == "sk-new"

    submit(admin_client, change_url, {"clear_api_key": "on"})
    openai.refresh_from_db()
    assert openai.api_key == ""


def test_the_key_is_encrypted_at_rest(openai):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT api_key FROM llm_provider WHERE id = %s", [openai.pk])
        (raw,) = cursor.fetchone()
    assert KEY not in raw and raw.startswith("gAAAA")


def test_add_a_provider_in_the_admin(admin_client, alice):
    response = admin_client.post(
        reverse("admin:llm_provider_add"),
        {
            "name": "alice-local",
            "kind": "openai",
            "base_url": "http://ollama:11434/v1",
            "default_model": "qwen3",
            "api_key": "",
            "owner": alice.pk,
            "is_default": "on",
        },
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    provider = Provider.objects.get(name="alice-local")
    assert provider.owner == alice and provider.is_default and provider.api_key == ""


def test_test_connection_action_reports_models_or_the_error(admin_client, db):
    with ScriptedLLM(models=["qwen3-8b"], api_key="right") as llm:
        good = services.create_provider(
            actor=None, name="good", kind="openai", base_url=llm.url, api_key="right", shared=True
        )
        bad = services.create_provider(
            actor=None, name="bad", kind="anthropic", base_url=llm.url, api_key="wrong", shared=True
        )
        response = admin_client.post(
            reverse("admin:llm_provider_changelist"),
            {
                "action": "test_connection",
                "_selected_action": [good.pk, bad.pk],
            },
            follow=True,
        )

    html = response.content.decode()
    assert "Good: Connected: 1 model(s), e.g. qwen3-8b" in html
    assert "Bad: The provider at" in html and "rejected the API key" in html
