"""A small HTTP/1.1 keep-alive client for the lean request path (see lean_http.py).

Why not httpx2 for this one POST: measured in one process against the SDK's echo backend
(benchmarks/gateway.py's setup, 2 cores), a tools/call through httpx2 cost ~1.1 ms of our
CPU, the same call on asyncio streams ~0.2 ms; httpx2's layers (httpcore2 pool, h11,
anyio streams and cancel scopes per read, header validation) were most of the hub's CPU
per call to an HTTP backend. This client does only what the lean path needs: POST a body
with fixed headers on a reused connection, read a `Content-Length` or chunked body, whole
or as it streams. Everything else (the handshake, the GET stream, redirects, proxies,
auth flows) stays with httpx2 and the SDK; `LeanHttp` is not used where httpx2 would
route through a proxy.

Why not aiohttp (installed for the LLM clients): `benchmarks/lean_post.py` puts it in this
client's place on the same lean path (one process, the echo backend, interleaved A/B, 6 rounds
of 400 calls; 2 shared cores at load ~11). This process's CPU per raw tools/call, then p50 at
concurrency 1 and calls/s at 32:
    SSE responses    http1.py 0.32 ms, 1.91 ms, 426/s   aiohttp 0.52 ms, 2.29 ms, 277/s
    JSON responses   http1.py 0.20 ms, 1.04 ms, 933/s   aiohttp 0.39 ms, 1.46 ms, 758/s
A second run agreed (CPU 0.28 vs 0.49 ms with SSE, 0.20 vs 0.35 ms with JSON). aiohttp's
request machinery (cookie jar, tracing hooks, its own parser and stream reader) costs
~0.15-0.2 ms more of our CPU per call than this client, and is slower at both concurrencies:
this client stays.

A connection is reused only after its response was read to the end and the server did
not ask to close it; one found closed by the server while idle (the request got no byte
back) is replaced and the request sent again once, as browsers and httpx do.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Mapping
from urllib.parse import urlsplit

from apps.connections.transports.guard import Guard

_LIMIT = 1 << 20  # StreamReader buffer: one line (a chunk-size line, a header) must fit
_IDLE_KEEP = 32  # idle connections kept per backend session (as httpx2's max_keepalive_connections)
_CONNECT_TIMEOUT = (
    30.0  # TCP connect + TLS handshake, as httpx2's connect timeout (transports/http.py)
)


class HttpError(OSError):
    """The connection failed or the server broke the HTTP/1.1 framing."""


class Response:
    """A response whose body has not been read yet; `aread()` or `aiter_bytes()` once, then `aclose()`."""

    def __init__(self, conn: _Conn, status_code: int, headers: dict[str, str], method: str) -> None:
        self.status_code = status_code
        self.headers = headers
        self._conn: _Conn | None = conn
        self._chunked = headers.get("transfer-encoding", "").lower().endswith("chunked")
        length = headers.get("content-length")
        self._length = int(length) if length is not None and not self._chunked else None
        self._bodiless = method == "HEAD" or status_code in (204, 304) or 100 <= status_code < 200
        self._done = False

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if conn is None or self._done:
            return
        reader = conn.reader
        try:
            if self._bodiless or self._length == 0:
                pass
            elif self._chunked:
                while True:
                    size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
                    if size == 0:
                        while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers, if any
                            pass
                        break
                    data = await reader.readexactly(size + 2)
                    yield data[:-2]
            elif self._length is not None:
                left = self._length
                while left:
                    data = await reader.read(min(left, 65536))
                    if not data:
                        raise HttpError("connection closed in the middle of a response body")
                    left -= len(data)
                    yield data
            else:  # no length, not chunked: the body runs to the end of the connection
                conn.reusable = False
                while data := await reader.read(65536):
                    yield data
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            conn.reusable = False
            raise HttpError(f"broken response body: {exc}") from None
        except BaseException:
            conn.reusable = False
            raise
        self._done = True

    async def aread(self) -> bytes:
        return b"".join([chunk async for chunk in self.aiter_bytes()])

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.release(reuse=self._done)


class _Conn:
    __slots__ = ("client", "reader", "writer", "reusable")

    def __init__(
        self, client: Http1Client, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.client = client
        self.reader = reader
        self.writer = writer
        self.reusable = True

    def release(self, *, reuse: bool) -> None:
        if (
            reuse
            and self.reusable
            and not self.reader.at_eof()
            and not self.client.closed
            and len(self.client.idle) < _IDLE_KEEP
        ):
            self.client.idle.append(self)
        else:
            self.writer.close()


class Http1Client:
    """Keep-alive connections to one origin; `post()` sends on an idle one or a new one."""

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        ssl_context: ssl.SSLContext | None = None,
        *,
        connect_timeout: float = _CONNECT_TIMEOUT,
        guard: Guard | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.ssl = (
            (ssl_context or ssl.create_default_context()) if parts.scheme == "https" else None
        )
        self.connect_timeout = connect_timeout
        # The outbound address policy, when one applies: connect only to what it permits.
        self.guard = guard
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        default_port = self.port == (443 if parts.scheme == "https" else 80)
        host = f"[{self.host}]" if ":" in self.host else self.host
        self._prefix = f"Host: {host if default_port else f'{host}:{self.port}'}\r\n" + "".join(
            f"{_token(k)}: {_value(v)}\r\n"
            for k, v in headers.items()
            if k.lower() not in ("host", "content-length")
        )
        self.idle: list[_Conn] = []
        self.closed = False

    async def post(self, body: bytes, headers: Mapping[str, str]) -> Response:
        head = (
            f"POST {self.target} HTTP/1.1\r\n{self._prefix}"
            + "".join(f"{_token(k)}: {_value(v)}\r\n" for k, v in headers.items())
            + f"Content-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1")
        while self.idle:
            conn = self.idle.pop()
            if conn.reader.at_eof():
                conn.writer.close()
                continue
            try:
                return await self._exchange(conn, head, body)
            except _StaleConnection:
                continue  # closed by the server while idle: the request never reached it
        return await self._exchange(await self._connect(), head, body, fresh=True)

    async def _connect(self) -> _Conn:
        # A server that takes the TCP connection but never finishes the TLS handshake (or a port
        # that drops SYNs) fails here, as on httpx2, instead of holding the call to its timeout.
        if self.guard is not None:
            return await self._connect_permitted(self.guard)
        try:
            async with asyncio.timeout(self.connect_timeout):
                reader, writer = await asyncio.open_connection(
                    self.host,
                    self.port,
                    ssl=self.ssl,
                    limit=_LIMIT,
                    server_hostname=self.host if self.ssl else None,
                )
        except TimeoutError:
            raise HttpError(
                f"cannot connect to {self.host}:{self.port}: timed out after {self.connect_timeout:g} s"
            ) from None
        except (OSError, ssl.SSLError) as exc:
            raise HttpError(f"cannot connect to {self.host}:{self.port}: {exc}") from None
        return _Conn(self, reader, writer)

    async def _connect_permitted(self, guard: Guard) -> _Conn:
        """Connect to an address the policy permits (resolved once, there); its one text for any failure."""
        try:
            permitted = await guard.aaddresses(self.host, self.port)
        except OSError:
            permitted = []
        for address in permitted:
            try:
                async with asyncio.timeout(self.connect_timeout):
                    reader, writer = await asyncio.open_connection(
                        address,
                        self.port,
                        ssl=self.ssl,
                        limit=_LIMIT,
                        server_hostname=self.host if self.ssl else None,
                    )
                return _Conn(self, reader, writer)
            except (TimeoutError, OSError, ssl.SSLError):
                continue
        raise HttpError(guard.refused)

    async def _exchange(
        self, conn: _Conn, head: bytes, body: bytes, *, fresh: bool = False
    ) -> Response:
        try:
            conn.writer.write(head + body)
            await conn.writer.drain()
            status_line, *lines = (
                (await conn.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            )
            status = int(status_line.split(" ", 2)[1])
            headers: dict[str, str] = {}
            for line in lines:
                if not line:
                    continue
                key, _, value = line.partition(":")
                key = key.strip().lower()
                value = value.strip()
                headers[key] = f"{headers[key]}, {value}" if key in headers else value
        except asyncio.IncompleteReadError as exc:
            conn.writer.close()
            if not fresh and not exc.partial:
                raise _StaleConnection() from None
            raise HttpError("the server closed the connection without an answer") from None
        except (OSError, ssl.SSLError) as exc:
            conn.writer.close()
            if not fresh and isinstance(exc, ConnectionError):
                raise _StaleConnection() from None
            raise HttpError(f"connection to {self.host}:{self.port} failed: {exc}") from None
        except (asyncio.LimitOverrunError, ValueError, IndexError) as exc:
            conn.writer.close()
            raise HttpError(f"not an HTTP/1.1 response: {exc}") from None
        except BaseException:
            conn.writer.close()  # cancelled mid-exchange: the connection's state is unknown
            raise
        if "close" in headers.get("connection", "").lower():
            conn.reusable = False
        return Response(conn, status, headers, "POST")

    def close(self) -> None:
        self.closed = True
        idle, self.idle = self.idle, []
        for conn in idle:
            conn.writer.close()


class _StaleConnection(Exception):
    pass


def _token(name: str) -> str:
    if not name or any(c in name for c in ":\r\n \t"):
        raise ValueError(f"invalid HTTP header name {name!r}")
    return name


def _value(value: str) -> str:
    if "\r" in value or "\n" in value:
        raise ValueError("invalid HTTP header value (line break)")
    return value
