"""Registry of adapters by provider kind (the shape of healthchecks' transports)."""

from __future__ import annotations

from apps.llm.adapters.base import Adapter
from apps.llm.types import LLMError

_REGISTRY: dict[str, type[Adapter]] = {}


def register(cls: type[Adapter]) -> type[Adapter]:
    _REGISTRY[cls.kind] = cls
    return cls


def adapter_class(kind: str) -> type[Adapter]:
    try:
        return _REGISTRY[kind]
    except KeyError:
        raise LLMError(f"Unknown provider kind {kind!r}; known: {', '.join(kinds())}.", kind="bad_request") from None


def kinds() -> list[str]:
    return list(_REGISTRY)


# Importing the modules registers their adapters.
from apps.llm.adapters import anthropic_messages, openai_compat  # noqa: E402,F401

__all__ = ["Adapter", "adapter_class", "kinds", "register"]
