"""Streamable HTTP and legacy SSE transports: thin wrappers over the SDK's clients."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from apps.connections.sdk import TransportStreams
from apps.connections.specs import ServerSpec
from apps.connections.transports.guard import async_client_kwargs, guard
from apps.connections.transports.lean_http import HttpLink
from apps.connections.transports.stdio import ChildProcess

# Connect/write bounded; read long because a server may hold its SSE response stream open.
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
# No connection cap of httpx's own (100): it would queue calls silently behind slow ones. The
# pool's per-server limit (max_inflight_per_server) bounds them, with a clear error.
_HTTP_LIMITS = httpx2.Limits(max_connections=None, max_keepalive_connections=32)


@asynccontextmanager
async def streamable_http_transport(
    spec: ServerSpec, child: ChildProcess
) -> AsyncIterator[TransportStreams]:
    def expired() -> None:
        child.session_expired = True

    async def watch(response: httpx2.Response) -> None:
        link.saw(response)

    # One TLS context for the SDK's client and the lean one: the same trust roots (httpx2's:
    # SSL_CERT_FILE / SSL_CERT_DIR, else the system store), and the CA store loaded once, not twice.
    tls = httpx2.create_ssl_context()
    guarded = async_client_kwargs(spec.public_only, verify=tls, limits=_HTTP_LIMITS)
    async with httpx2.AsyncClient(
        headers=dict(spec.headers),
        timeout=_HTTP_TIMEOUT,
        limits=_HTTP_LIMITS,
        event_hooks={"response": [watch]},
        verify=tls,
        **guarded,  # type: ignore[arg-type]
    ) as http:
        # Shared with the lean request path (transports/lean_http.py) once the SDK has done the handshake.
        link = HttpLink(spec.url, spec.headers, http, expired, tls, guard=guard(spec.public_only))
        child.http = link
        try:
            async with streamable_http_client(spec.url, http_client=http) as streams:
                yield streams
        finally:
            child.http = None


@asynccontextmanager
async def sse_transport(spec: ServerSpec, child: ChildProcess) -> AsyncIterator[TransportStreams]:
    def client(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout or _HTTP_TIMEOUT,
            auth=auth,
            **async_client_kwargs(True),
        )  # type: ignore[arg-type]

    factory = {"httpx_client_factory": client} if spec.public_only else {}
    async with sse_client(
        spec.url, headers=dict(spec.headers), timeout=30.0, sse_read_timeout=300.0, **factory
    ) as streams:
        yield streams
