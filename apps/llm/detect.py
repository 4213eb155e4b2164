"""Finding a local LLM server (LM Studio, Ollama) that answers, to offer it as a provider."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from asgiref.sync import async_to_sync
from django.conf import settings
from django.utils.text import slugify

from apps.llm.adapters import adapter_class
from apps.llm.models import Provider
from apps.llm.types import LLMError

# (label, OpenAI-compatible base URL) of the local servers people run; MCPHUB_LLM_LOCAL_SERVERS overrides.
LOCAL_SERVERS = (("LM Studio", "http://127.0.0.1:1234/v1"), ("Ollama", "http://127.0.0.1:11434/v1"))


@dataclass(frozen=True)
class LocalServer:
    label: str
    base_url: str
    models: list[str]

    @property
    def name(self) -> str:
        return slugify(self.label)

    @property
    def suggested_model(self) -> str:
        # Embedding models answer /v1/models too, but cannot chat.
        chat = [m for m in self.models if "embed" not in m.lower()]
        return (chat or self.models or [""])[0]


def candidates() -> tuple[tuple[str, str], ...]:
    return tuple(getattr(settings, "MCPHUB_LLM_LOCAL_SERVERS", LOCAL_SERVERS))


async def _probe(label: str, base_url: str, timeout: float) -> LocalServer | None:
    adapter = adapter_class("openai")(base_url=base_url, api_key=None, timeout=timeout)
    try:
        return LocalServer(label, base_url, await adapter.list_models(retry=False))
    except LLMError:
        return None
    finally:
        await adapter.aclose()


async def adetect(timeout: float = 2.0) -> list[LocalServer]:
    found = await asyncio.gather(*(_probe(label, url, timeout) for label, url in candidates()))
    return [server for server in found if server is not None]


def detect_unconfigured(timeout: float = 2.0) -> list[LocalServer]:
    """Local servers that answer and that no provider points at yet."""
    known = {url.rstrip("/") for url in Provider.objects.values_list("base_url", flat=True)}
    return [s for s in async_to_sync(adetect)(timeout) if s.base_url.rstrip("/") not in known]
