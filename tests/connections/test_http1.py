"""The lean path's HTTP/1.1 client (transports/http1.py) against a real socket server scripted per test.

The servers here answer with exact bytes, to check framing the SDK servers never produce:
`Connection: close`, a body cut short, a garbled status line, a body without a length,
a chunked body split across writes, and a kept-alive connection reused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from apps.connections.transports.http1 import Http1Client, HttpError

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

Answer = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]


class Scripted:
    """A TCP server that reads each request's head and body, then runs `answer` (the nth request overall)."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[bytes] = []
        self.connections = 0
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> Scripted:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/mcp?x=1"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                self.requests.append(head + await reader.readexactly(length))
                await self.answer(reader, writer, len(self.requests))
                if writer.is_closing():
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def _json(body: bytes, extra: bytes = b"") -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s"
        % (len(body), extra, body)
    )


async def test_requests_reuse_one_connection_and_carry_the_headers():
    async def answer(reader, writer, n):
        writer.write(_json(b'{"n": %d}' % n))

    async with Scripted(answer) as server:
        client = Http1Client(server.url, {"X-Api-Key": "k"})
        for n in (1, 2, 3):
            response = await client.post(b'{"a": 1}', {"mcp-session-id": "s"})
            assert (response.status_code, await response.aread()) == (200, b'{"n": %d}' % n)
            await response.aclose()
        client.close()
    assert server.connections == 1
    first = server.requests[0]
    assert first.startswith(b"POST /mcp?x=1 HTTP/1.1\r\n")
    assert (
        b"\r\nX-Api-Key: k\r\n" in first
        and b"\r\nmcp-session-id: s\r\n" in first
        and first.endswith(b'{"a": 1}')
    )


async def test_connection_close_and_a_body_left_unread_are_not_reused():
    async def answer(reader, writer, n):
        if n == 1:
            writer.write(_json(b"{}", b"Connection: close\r\n"))
            writer.close()
        else:
            writer.write(_json(b"{}"))

    async with Scripted(answer) as server:
        client = Http1Client(server.url, {})
        for _ in range(2):
            response = await client.post(b"{}", {})
            await response.aread()
            await response.aclose()
        unread = await client.post(b"{}", {})
        await (
            unread.aclose()
        )  # body never read: the connection's state is unknown, so it is dropped
        last = await client.post(b"{}", {})
        await last.aread()
        await last.aclose()
        client.close()
    assert server.connections == 3


async def test_a_chunked_body_split_across_writes_streams_in_order():
    async def answer(reader, writer, n):
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        for part in (b"data: one\r\n", b"\r\ndata: two\r\n\r\n"):
            writer.write(b"%x\r\n%s\r\n" % (len(part), part))
            await writer.drain()
            await asyncio.sleep(0.05)  # each part arrives in a read of its own
        writer.write(b"0\r\n\r\n")

    async with Scripted(answer) as server:
        client = Http1Client(server.url, {})
        response = await client.post(b"{}", {})
        chunks = [chunk async for chunk in response.aiter_bytes()]
        await response.aclose()
        assert chunks == [b"data: one\r\n", b"\r\ndata: two\r\n\r\n"]
        again = await client.post(
            b"{}", {}
        )  # the whole chunked body was read: the connection is reused
        await again.aread()
        await again.aclose()
        client.close()
    assert server.connections == 1


async def test_a_body_cut_short_or_a_garbled_answer_is_an_error():
    async def answer(reader, writer, n):
        if n == 1:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this")
        else:
            writer.write(b"SPDY/9 lol\r\n\r\n")
        await writer.drain()
        writer.close()

    async with Scripted(answer) as server:
        client = Http1Client(server.url, {})
        response = await client.post(b"{}", {})
        with pytest.raises(HttpError, match="closed in the middle"):
            await response.aread()
        await response.aclose()
        with pytest.raises(HttpError, match="not an HTTP/1.1 response"):
            await client.post(b"{}", {})
        client.close()


async def test_nobody_listening_is_an_error_and_bad_headers_are_refused():
    async with Scripted(lambda *a: asyncio.sleep(0)) as server:
        url = server.url
    client = Http1Client(url, {})
    with pytest.raises(HttpError, match="cannot connect"):
        await client.post(b"{}", {})
    with pytest.raises(ValueError):
        Http1Client(url, {"X-Evil": "a\r\nInjected: yes"})
    with pytest.raises(ValueError):
        Http1Client("ftp://example.com/", {})
