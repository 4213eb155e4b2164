"""Listing a provider's models: what "test connection" and the model picker show."""

import pytest

from apps.llm.adapters import adapter_class
from apps.llm.types import LLMError
from tests.llm_server import ScriptedLLM

pytestmark = pytest.mark.anyio


async def test_lists_the_models_the_provider_serves(kind):
    with ScriptedLLM(models=["zeta-7b", "alpha-70b"]) as llm:
        async with adapter_class(kind)(base_url=llm.url, api_key=None) as adapter:
            assert await adapter.list_models() == ["alpha-70b", "zeta-7b"]

    # The Anthropic adapter found /v1/models from a base URL given with or without /v1.
    assert llm.received[-1].path.startswith("/v1/models")


async def test_a_wrong_key_fails_the_listing_with_the_auth_message(kind):
    with ScriptedLLM(api_key="right") as llm:
        async with adapter_class(kind)(base_url=llm.url, api_key="wrong") as adapter:
            with pytest.raises(LLMError) as caught:
                await adapter.list_models()

    assert caught.value.kind == "auth"


async def test_the_key_travels_to_the_provider_and_nothing_from_the_environment(kind, monkeypatch):
    # The hub operator's own key must never reach a user's provider.
    monkeypatch.setenv("OPENAI_API_KEY", "operator-openai-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "operator-anthropic-key")
    with ScriptedLLM() as llm:
        async with adapter_class(kind)(base_url=llm.url, api_key=None) as adapter:
            await adapter.list_models()
        async with adapter_class(kind)(base_url=llm.url, api_key="users-key") as adapter:
            await adapter.list_models()

    without, with_key = (str(r.headers) for r in llm.received)
    assert "operator" not in without and "operator" not in with_key
    assert "users-key" in with_key
