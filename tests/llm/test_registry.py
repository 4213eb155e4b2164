"""Every provider kind a user can pick has an adapter behind it."""

import os
import subprocess
import sys

import pytest

from apps.llm.adapters import adapter_class, kinds
from apps.llm.models import Provider
from apps.llm.types import LLMError


def test_each_kind_of_provider_has_its_adapter():
    assert sorted(kinds()) == sorted(Provider.Kind.values)
    for kind in kinds():
        assert adapter_class(kind).kind == kind


def test_an_unknown_kind_is_a_clear_error():
    with pytest.raises(LLMError, match="Unknown provider kind 'gemini-nano'; known: "):
        adapter_class("gemini-nano")


def test_a_worker_preloads_the_sdks_of_the_kinds_in_use_and_no_other():
    # A fresh interpreter: this one may have imported either SDK already.
    script = (
        "import sys, django; django.setup()\n"
        "from apps.llm.adapters import preload\n"
        "preload(['openai', 'openai', 'no-such-kind'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('apps.llm.adapters.')))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "mcphub.settings"}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )

    loaded = out.stdout.strip().splitlines()[-1]
    assert "'apps.llm.adapters.openai_compat'" in loaded
    assert "anthropic_messages" not in loaded
