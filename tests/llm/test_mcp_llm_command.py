"""`manage.py mcp_llm`: add, list, remove and detect providers from scripts."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from apps.llm.models import Provider
from apps.llm.selectors import default_provider_for
from tests.llm_server import ScriptedLLM


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("mcp_llm", *args, stdout=out)
    return out.getvalue()


def test_add_a_shared_default_provider_with_its_key_from_the_environment(db, alice, monkeypatch):
    monkeypatch.setenv("HUB_TEST_OPENAI_KEY", "sk-from-env")

    said = run(
        "add",
        "openai",
        "--kind",
        "openai",
        "--base-url",
        "https://api.openai.com/v1",
        "--model",
        "gpt-4o-mini",
        "--api-key-env",
        "HUB_TEST_OPENAI_KEY",
        "--shared",
        "--default",
    )

    assert "Added shared provider 'openai'" in said
    provider = Provider.objects.get(name="openai")
    assert provider.is_shared and provider.is_default and provider.api_key == "sk-from-env"
    assert default_provider_for(alice) == provider
    listing = run("list")
    assert (
        "openai\topenai\thttps://api.openai.com/v1\tmodel=gpt-4o-mini\tshared\tdefault key"
        in listing
    )
    assert "sk-from-env" not in listing


def test_add_a_private_provider_and_remove_it(db, alice):
    run(
        "add",
        "mine",
        "--kind",
        "anthropic",
        "--base-url",
        "https://api.anthropic.com",
        "--model",
        "claude",
        "--owner",
        "alice",
    )

    assert Provider.objects.get(name="mine").owner == alice
    assert "Removed provider 'mine'" in run("remove", "mine", "--owner", "alice")
    assert not Provider.objects.exists()


def test_adding_the_same_name_again_updates_it(db):
    run(
        "add",
        "local",
        "--kind",
        "openai",
        "--base-url",
        "http://127.0.0.1:1234/v1",
        "--model",
        "a",
        "--shared",
    )
    said = run(
        "add",
        "local",
        "--kind",
        "openai",
        "--base-url",
        "http://127.0.0.1:1234/v1",
        "--model",
        "b",
        "--shared",
    )

    assert said.startswith("Updated")
    assert list(Provider.objects.values_list("default_model", flat=True)) == ["b"]


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["add", "x", "--kind", "openai", "--base-url", "ftp://x", "--model", "m", "--shared"],
            "http(s) URL",
        ),
        (
            [
                "add",
                "x",
                "--kind",
                "openai",
                "--base-url",
                "http://x/v1",
                "--model",
                "m",
                "--shared",
                "--api-key-env",
                "HUB_TEST_UNSET_VARIABLE",
            ],
            "HUB_TEST_UNSET_VARIABLE is not set",
        ),
        (
            [
                "add",
                "x",
                "--kind",
                "openai",
                "--base-url",
                "http://x/v1",
                "--model",
                "m",
                "--owner",
                "nobody",
            ],
            "No user",
        ),
        (["remove", "ghost"], "No shared provider named 'ghost'"),
    ],
)
def test_bad_input_is_a_clear_error_and_changes_nothing(db, args, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run(*args)
    assert not Provider.objects.exists()


def test_add_needs_a_scope(db):
    with pytest.raises(CommandError, match="--shared"):
        run("add", "x", "--kind", "openai", "--base-url", "http://x/v1", "--model", "m")


def test_first_run_adds_a_local_server_that_answers_and_says_so(db, settings):
    with ScriptedLLM(models=["nomic-embed-text", "qwen3-8b"]) as lm_studio:
        settings.MCPHUB_LLM_LOCAL_SERVERS = [
            ("LM Studio", lm_studio.url),
            ("Ollama", "http://127.0.0.1:9/v1"),
        ]

        said = run("detect", "--if-none")
        again = run("detect", "--if-none")

    assert f"Found LM Studio at {lm_studio.url} with 2 model(s)" in said
    provider = Provider.objects.get()
    assert (provider.name, provider.is_shared, provider.is_default) == ("lm-studio", True, True)
    assert provider.default_model == "qwen3-8b"  # not the embedding model
    assert again == ""


def test_detect_says_where_it_looked_when_nothing_answers(db, settings):
    settings.MCPHUB_LLM_LOCAL_SERVERS = [("LM Studio", "http://127.0.0.1:9/v1")]

    said = run("detect")

    assert "No local LLM server answered (LM Studio (http://127.0.0.1:9/v1))" in said
    assert not Provider.objects.exists()


def test_add_an_anthropic_provider_that_thinks(db):
    run(
        "add",
        "claude",
        "--kind",
        "anthropic",
        "--base-url",
        "https://api.anthropic.com",
        "--model",
        "claude-sonnet-4-5",
        "--shared",
        "--thinking-budget",
        "4096",
        "--max-output-tokens",
        "32000",
    )

    provider = Provider.objects.get(name="claude")
    assert (provider.thinking_budget, provider.max_output_tokens, provider.reasoning_effort) == (
        4096,
        32000,
        "",
    )
    with pytest.raises(CommandError, match="reasoning effort"):
        run(
            "add",
            "claude",
            "--kind",
            "anthropic",
            "--base-url",
            "https://api.anthropic.com",
            "--model",
            "claude-sonnet-4-5",
            "--shared",
            "--reasoning-effort",
            "high",
        )
    assert Provider.objects.get(name="claude").reasoning_effort == ""
