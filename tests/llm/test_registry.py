"""Every provider kind a user can pick has an adapter behind it."""

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
