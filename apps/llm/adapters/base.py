"""The adapter contract: one subclass per provider kind, all speaking the events of apps/llm/types.py."""

from __future__ import annotations

import ssl
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar

from apps.llm.types import Event, Message, ToolSpec

if TYPE_CHECKING:
    import httpx2


# Keyless servers (LM Studio, Ollama, a local proxy) still get a key: the SDKs insist on one, and
# without one they would read OPENAI_API_KEY / ANTHROPIC_API_KEY or credential files from the hub's
# environment. A user's base URL must never receive the operator's key.
NO_KEY = "no-key"


@cache
def shared_ssl_context() -> ssl.SSLContext:
    """One TLS context per process: building one loads the CA store (~70 ms of CPU), and every
    adapter (one per chat turn) would otherwise build its own. SSLContext is safe to share."""
    import httpx2  # the SDKs' HTTP client; loaded with them, on first use

    return httpx2.create_ssl_context()


def sdk_http_client(
    sdk: ModuleType, timeouts: httpx2.Timeout, *, public_only: bool = False
) -> httpx2.AsyncClient:
    """The HTTP client an official SDK (`openai`, `anthropic`) sends through: its documented aiohttp
    transport (`DefaultAioHttpClient`, the SDKs' `aiohttp` extra) instead of the default httpx2 one.
    The SDK's request path, retries, errors and SSE decoding stay the same; underneath is a
    C-accelerated HTTP client. Measured on this 2-core machine, the OpenAI adapter streaming a
    9-chunk reply from the scripted LLM (10 tools, 11 messages): httpx2 1.66 ms CPU per request
    alone and 2.05 ms at 100 concurrent; aiohttp 1.04 and 1.21 ms — 0.8 ms less per model round on
    the worker's chat loop, which carries a hundred turns and runs at once.

    `public_only` (a base URL a non-staff user chose): every request, redirects included, goes
    through the outbound address policy (apps/core/outbound.py), and no environment proxy."""
    if not public_only:
        return sdk.DefaultAioHttpClient(verify=shared_ssl_context(), timeout=timeouts)
    return _guarded_client_class(sdk)(
        verify=shared_ssl_context(), timeout=timeouts, trust_env=False
    )


@cache
def _guarded_client_class(sdk: ModuleType) -> type[httpx2.AsyncClient]:
    from apps.core.outbound import PUBLIC_ONLY

    class GuardedAioHttpClient(sdk.DefaultAioHttpClient):  # type: ignore[name-defined, misc]
        # httpx's per-client transport factory, which the SDK's aiohttp client itself overrides to
        # build its transport: ours wraps that one, so the SDK's error mapping stays as it is.
        def _init_transport(self, *args: object, **kwargs: object) -> httpx2.AsyncBaseTransport:
            return PUBLIC_ONLY.async_transport(super()._init_transport(*args, **kwargs))

    return GuardedAioHttpClient


@dataclass(frozen=True)
class Tuning:
    """A provider's model settings (apps.llm.models.Provider): none of them set means the provider's defaults."""

    reasoning_effort: str = ""  # OpenAI-style `reasoning_effort` (minimal, low, medium, high…)
    thinking_budget: int | None = None  # Anthropic extended thinking: `budget_tokens`
    max_output_tokens: int | None = None  # the output limit of a reply; None: the model's own


class Adapter(ABC):
    """Talks to one provider account.

    `stream()` yields text deltas as they arrive, each ToolCall once and whole, then Usage (if the
    provider reported it) and Finish last. It retries once on a transient failure before its first
    event (with `patience` > 0: waits an outage out for up to that many seconds, saying so with
    ProviderStatus events) and raises LLMError with a user-presentable message otherwise. Cancelling the task that
    iterates it closes the HTTP response.
    """

    kind: ClassVar[str]

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None,
        timeout: float = 120.0,
        tuning: Tuning | None = None,
        public_only: bool = False,
    ) -> None:
        self.base_url = base_url
        self.api_key = api_key or None
        self.timeout = timeout
        self.tuning = tuning or Tuning()
        self.public_only = (
            public_only  # a non-staff user chose base_url: the outbound address policy applies
        )

    @abstractmethod
    def stream(
        self,
        *,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        max_tokens: int | None = None,
        patience: float = 0.0,
        temperature: float | None = None,
        stop: Sequence[str] = (),
    ) -> AsyncIterator[Event]: ...

    @abstractmethod
    async def list_models(self, *, retry: bool = True) -> list[str]:
        """Model ids the provider serves, sorted; `retry=False` for quick probes (start-up detection)."""

    async def aclose(self) -> None:
        return None

    async def __aenter__(self) -> Adapter:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
