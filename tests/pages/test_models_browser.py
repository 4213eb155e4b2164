"""In real Chromium: staff add a detected Ollama, alice adds her own provider and tests it (htmx), on a phone too."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from apps.llm.models import Provider
from tests.llm_server import ScriptedLLM

pytestmark = pytest.mark.django_db(transaction=True)


def test_staff_add_the_detected_server_and_alice_tests_her_own(
    sign_in, screenshot, admin_user, alice, settings
):
    with (
        ScriptedLLM(models=["qwen3-8b", "nomic-embed-text"]) as ollama,
        ScriptedLLM(models=["gpt-4o-mini"], api_key="sk-alice") as hosted,
    ):
        settings.MCPHUB_LLM_LOCAL_SERVERS = [("Ollama", ollama.url)]
        admin = sign_in("admin", "admin-password")
        admin.get_by_role("link", name="Models").click()
        admin.get_by_role("button", name="Add detected Ollama").click()
        expect(admin.locator("#flash")).to_contain_text("Added Ollama as shared provider ollama")
        expect(admin.locator("table.providers")).to_contain_text("qwen3-8b")

        page = sign_in("alice", "alice-password", width=390)
        page.get_by_role("link", name="Models").click()
        page.get_by_label("Name").fill("my-openai")
        page.get_by_label("Base URL").fill(hosted.url)
        page.get_by_label("Default model").fill("gpt-4o-mini")
        page.get_by_label("API key", exact=True).fill("sk-alice")
        page.get_by_role("button", name="Add provider").click()
        expect(page.locator("#flash")).to_contain_text("Added my-openai")

        row = page.locator("tr", has_text="my-openai")
        row.get_by_role("button", name="Test & list models").click()
        expect(row).to_contain_text("Connected: 1 model(s)")
        expect(page.locator("body")).not_to_contain_text("sk-alice")
        screenshot(page, "models-phone")

    assert Provider.objects.get(name="my-openai").api_key == "sk-alice"
