"""One adapter per provider per event loop, reused by every turn: its HTTP connections stay open.

Building an adapter (an SDK client) costs milliseconds, and a fresh one opens a new connection; a
turn on the worker's loop takes the cached one. A provider saved since gets a new adapter (key,
URL or kind may have changed) and the old one is closed.
"""

from __future__ import annotations

import asyncio
import weakref
from datetime import datetime
from typing import Any

from apps.llm.adapters import Adapter
from apps.llm.models import Provider
from apps.llm.services import adapter_for

_adapters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, tuple[Any, Adapter]]] = (
    weakref.WeakKeyDictionary()
)


# The providers turns started with lately, as saved at `updated_at` (sync: database threads).
_saved: dict[int, Provider] = {}


def saved(provider_id: int, updated_at: datetime) -> Provider | None:
    """The provider as saved at `updated_at` (with its owner: `public_only`), read once per save
    rather than with every turn's start (its row and its owner's, a third of that query's CPU);
    None when it was deleted meanwhile."""
    found = _saved.get(provider_id)
    if found is None or found.updated_at != updated_at:
        found = Provider.objects.select_related("owner").filter(pk=provider_id).first()
        if found is None:
            _saved.pop(provider_id, None)
            return None
        _saved[provider_id] = found
    return found


def adapter(provider) -> Adapter:
    """The adapter for `provider` as saved now; call on the loop that will use it."""
    cache = _adapters.setdefault(asyncio.get_running_loop(), {})
    cached = cache.get(provider.pk)
    if cached is not None and cached[0] == provider.updated_at:
        return cached[1]
    if cached is not None:
        asyncio.ensure_future(cached[1].aclose())
    fresh = adapter_for(provider)
    cache[provider.pk] = (provider.updated_at, fresh)
    return fresh


# What a user without any LLM provider is told (by chat turns and runs).
NO_PROVIDER = (
    "No LLM provider is configured. Add one on the Models page, in the admin, or with "
    "`./hub manage mcp_llm add NAME --kind openai --base-url URL --model MODEL --shared`."
)
