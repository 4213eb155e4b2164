"""Registry of adapters by provider kind (the shape of healthchecks' transports).

Adapter modules load on first use: the SDKs cost ~1.4 s of CPU to import, and every process
(manage.py, web, worker) would otherwise pay it at Django start-up through the admin and URLs.
"""

from __future__ import annotations

from importlib import import_module

from apps.llm.adapters.base import Adapter
from apps.llm.types import LLMError

# kind -> the module whose @register class serves it
_MODULES = {
    "openai": "apps.llm.adapters.openai_compat",
    "anthropic": "apps.llm.adapters.anthropic_messages",
}
_REGISTRY: dict[str, type[Adapter]] = {}


def register(cls: type[Adapter]) -> type[Adapter]:
    _REGISTRY[cls.kind] = cls
    return cls


def adapter_class(kind: str) -> type[Adapter]:
    if kind not in _MODULES:
        raise LLMError(
            f"Unknown provider kind {kind!r}; known: {', '.join(kinds())}.", kind="bad_request"
        )
    import_module(_MODULES[kind])
    return _REGISTRY[kind]


def kinds() -> list[str]:
    return list(_MODULES)


__all__ = ["Adapter", "adapter_class", "kinds", "register"]
