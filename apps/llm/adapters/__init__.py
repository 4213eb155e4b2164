"""Registry of adapters by provider kind (the shape of healthchecks' transports).

Adapter modules load on first use: the SDKs cost ~1.4 s of CPU to import, and every process
(manage.py, web, worker) would otherwise pay it at Django start-up through the admin and URLs.
"""

from __future__ import annotations

from collections.abc import Iterable
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


def preload(used: Iterable[str]) -> None:
    """Import the SDKs of the provider kinds in `used` now (a Celery worker does it from a thread
    once ready): the first turn or run would otherwise import its SDK on the chat loop, which then
    carries no other turn for the ~1.4 s of CPU it takes. Only kinds in use: an unused SDK would
    cost that CPU for nothing."""
    for kind in set(used) & set(_MODULES):
        import_module(_MODULES[kind])


def kinds() -> list[str]:
    return list(_MODULES)


__all__ = ["Adapter", "adapter_class", "kinds", "preload", "register"]
