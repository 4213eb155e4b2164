"""A provider's model settings (reasoning effort, thinking budget, output limit): set, shown and
validated through the API and the Models page, and what the adapter then asks the model for."""

from __future__ import annotations

import pytest

from apps.llm import services
from apps.llm.models import Provider

URL = "/api/llm/providers/"


@pytest.fixture
def claude(alice) -> Provider:
    return services.create_provider(
        actor=alice, name="claude", kind="anthropic", base_url="https://api.anthropic.com"
    )


def test_alice_turns_on_extended_thinking_and_sets_an_output_limit(as_alice, claude):
    response = as_alice.patch(
        f"{URL}{claude.pk}/", {"thinking_budget": 4096, "max_output_tokens": 16000}, format="json"
    )

    assert response.status_code == 200, response.content
    assert (response.data["thinking_budget"], response.data["max_output_tokens"]) == (4096, 16000)
    adapter = services.adapter_for(Provider.objects.get(pk=claude.pk))
    assert (adapter.tuning.thinking_budget, adapter.tuning.max_output_tokens) == (4096, 16000)
    assert as_alice.get(f"{URL}{claude.pk}/").data["reasoning_effort"] == ""


@pytest.mark.parametrize(
    "change, field",
    [
        ({"thinking_budget": 512}, "thinking_budget"),  # Anthropic's minimum is 1024
        (
            {"thinking_budget": 8000, "max_output_tokens": 4000},
            "thinking_budget",
        ),  # thinking counts in the output
        ({"reasoning_effort": "high"}, "reasoning_effort"),  # an OpenAI-compatible setting
        ({"max_output_tokens": 0}, "max_output_tokens"),
    ],
)
def test_a_setting_the_provider_cannot_take_is_refused_and_changes_nothing(
    as_alice, claude, change, field
):
    response = as_alice.patch(f"{URL}{claude.pk}/", change, format="json")

    assert response.status_code == 400
    assert field in response.json()
    claude.refresh_from_db()
    assert (claude.thinking_budget, claude.max_output_tokens, claude.reasoning_effort) == (
        None,
        None,
        "",
    )


def test_an_openai_compatible_provider_takes_a_reasoning_effort(as_alice):
    response = as_alice.post(
        URL,
        {
            "name": "o3",
            "kind": "openai",
            "base_url": "https://api.openai.com/v1",
            "reasoning_effort": "low",
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    assert services.adapter_for(Provider.objects.get(name="o3")).tuning.reasoning_effort == "low"
    refused = as_alice.post(
        URL,
        {
            "name": "o3b",
            "kind": "openai",
            "base_url": "https://api.openai.com/v1",
            "reasoning_effort": "extreme",
        },
        format="json",
    )
    assert refused.status_code == 400 and "reasoning_effort" in refused.json()


def test_the_models_page_edits_the_settings(client, alice, claude):
    client.force_login(alice)
    page = client.get(f"/models/{claude.pk}/edit/")
    assert b'name="thinking_budget"' in page.content and b'name="max_output_tokens"' in page.content
    response = client.post(
        f"/models/{claude.pk}/edit/",
        {
            "name": "claude",
            "kind": "anthropic",
            "base_url": "https://api.anthropic.com",
            "thinking_budget": "100",
        },
    )
    assert response.status_code == 400 and b"1024" in response.content
    claude.refresh_from_db()
    assert claude.thinking_budget is None
