"""Transports: async context managers yielding the SDK's (read_stream, write_stream) pair.

A small registry keyed by `ServerSpec.transport`, so adding one is one function here.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from apps.connections.sdk import TransportStreams
from apps.connections.specs import ServerSpec
from apps.connections.transports.http import sse_transport, streamable_http_transport
from apps.connections.transports.openapi import openapi_transport
from apps.connections.transports.stdio import ChildProcess, stdio_transport

Opener = Callable[[ServerSpec, ChildProcess], AbstractAsyncContextManager[TransportStreams]]

OPENERS: dict[str, Opener] = {
    "stdio": stdio_transport,
    "streamable_http": streamable_http_transport,
    "sse": sse_transport,
    "openapi": openapi_transport,
}


def open_transport(
    spec: ServerSpec, child: ChildProcess
) -> AbstractAsyncContextManager[TransportStreams]:
    return OPENERS[spec.transport](spec, child)


__all__ = ["ChildProcess", "open_transport"]
