"""The lean request path to a Streamable HTTP backend: one POST per request, parsed once.

The SDK's client session carries every request through memory streams, a writer task, a
task spawned per POST, a pydantic model of each message in both directions and a
dispatcher that correlates the reply: several tasks and two validations for one tool call,
about as much hub CPU as the backend spends answering it. Once the SDK has done the
handshake (`initialize`, the session id, the negotiated protocol version, the GET stream
for server notifications), a plain request needs none of that: it is one HTTP POST with
the session's headers, answered by a JSON body (parsed once, returned as a dict) or, when
the backend streams, by an SSE stream read here frame by frame.

What the SDK path does, this does too:
  - progress notifications on the request's stream reach the caller's progress callback
    (the request id is the progress token, as the SDK's dispatcher sets it);
  - log lines and other notifications go through the SDK session's own notification
    handler, in the caller's context, so `Connection`'s relay sends them to exactly the call
    whose stream they came on;
  - a server→client request on the stream (sampling, elicitation, roots, ping) is answered
    by the SDK session's callbacks (the same relay) and the answer POSTed back;
  - 404 for our session id marks the session expired (the pool starts a new session and
    runs the request again: it never ran), a JSON-RPC error keeps its code, a transport
    failure fails the connection like the SDK's transport does;
  - a caller that gives up (timeout, cancellation) closes the response stream and sends
    `notifications/cancelled` for the request, as the SDK's "courtesy cancel".

The POST goes out on a small HTTP/1.1 keep-alive client of its own (transports/http1.py,
one per backend session, with the server's configured headers): httpx2 alone cost ~0.9 ms
of CPU per call, most of what was left once the SDK's machinery was gone (measured there).
The rare requests (answers to server requests, cancellations, resuming a dropped stream)
use the session's httpx2 client. A backend reached through a proxy keeps the SDK path.

Not used for 2026-07-28 sessions (stateless requests carrying their own `_meta`, input-
required rounds): those keep the SDK path. A redirect answer sends the connection back to
the SDK path for good (it follows same-origin redirects; the request did not run here).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import ssl
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any

import httpx2
import mcp_types as types
from mcp.client.streamable_http import MCP_SESSION_ID
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, MCP_PROTOCOL_VERSION_HEADER, encode_header_value

from apps.connections import sdk
from apps.connections.transports.guard import Guard
from apps.connections.transports.http1 import Http1Client, HttpError

logger = logging.getLogger(__name__)

LAST_EVENT_ID = "last-event-id"
ProgressFn = Callable[[float, "float | None", "str | None"], Awaitable[None]]
# Our request ids: far above the SDK session's own counter (which starts at 0), so a
# backend's per-session id table never sees the same id from both paths.
_ID_BASE = 1_000_000_000
_CANCEL_TIMEOUT = 5.0
_RESUME_ATTEMPTS = 2
# A server's `retry:` is obeyed up to this (ms): longer would outlast most calls' timeouts.
_LONGEST_RETRY_MS = 30_000
_MAX_EVENT = 16 * 1024 * 1024
_DRAIN_TIMEOUT = 1.0
_TRANSPORT_ERRORS = (
    httpx2.TransportError,
    HttpError,
)  # after the response, how long the rest of its stream may take to end  # bytes of one SSE event before the stream is refused


class HttpLink:
    """What the SDK's Streamable HTTP transport and the lean path share of one session."""

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        http: httpx2.AsyncClient,
        on_expired: Callable[[], None],
        tls: ssl.SSLContext,
        *,
        guard: Guard | None = None,
    ) -> None:
        self.url = url
        self.guard = guard  # the outbound address policy `http` goes through, which the lean client applies too
        self.tls = (
            tls  # the TLS context `http` verifies servers with: the lean client uses the same
        )
        self.headers = dict(
            headers
        )  # the server's configured headers (auth): the lean client sends them too
        self.http = http
        self.session_id: str | None = None
        self.on_expired = on_expired
        self.get_stream_answered = asyncio.Event()

    async def wait_get_stream(self, timeout: float) -> None:
        """Wait (briefly) for the server to answer the SDK's GET stream, opened after the handshake
        of a session with an id (a stateless server gets none: nothing to wait for).

        Until then, what the server sends outside any request's stream (sampling asked by a
        tool without naming its request, list_changed) is dropped by the server: a call made
        the moment the session is up must not race it (the SDK path's slowness used to hide this).
        """
        if self.session_id is None:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self.get_stream_answered.wait()

    @property
    def proxied(self) -> bool:
        """httpx2 would reach the URL through a proxy (environment settings): the lean client cannot."""
        return sdk.proxied(self.http, self.url)

    def saw(self, response: httpx2.Response) -> None:
        """Response hook: learn the session id from the handshake; notice a forgotten session."""
        if response.request.method == "GET":
            self.get_stream_answered.set()
        sent = response.request.headers.get(MCP_SESSION_ID)
        if sent is None:
            if (
                given := response.headers.get(MCP_SESSION_ID)
            ) is not None and self.session_id is None:
                self.session_id = given
        elif response.status_code == 404:
            # The transport spec: 404 for a request carrying our session id means the server no
            # longer knows the session (it restarted); the SDK only turns it into a JSON-RPC error.
            self.on_expired()


class UseSdkPath(Exception):
    """The backend answered in a way only the SDK's transport handles (a redirect); nothing ran."""


class LeanHttp:
    """Plain requests on one negotiated Streamable HTTP session (see module docstring).

    `session` is the SDK `ClientSession` that did the handshake: its notification and
    server-request handlers are reused so relays behave exactly as on the SDK path.
    `on_lost` is told when the link itself failed (the connection must go).
    """

    streams_progress = True  # progress notifications come on the request's own stream

    def __init__(
        self, link: HttpLink, session: Any, protocol_version: str, on_lost: Callable[[str], None]
    ) -> None:
        self.link = link
        self.session = session
        self.protocol_version = protocol_version
        self.on_lost = on_lost
        self._ids = itertools.count(_ID_BASE)
        self._background: set[asyncio.Task[None]] = set()
        # The session's headers never change after the handshake: the client sends them as one block.
        headers = {"user-agent": "mcp-hub", **link.headers, **self.headers()}
        self._h1 = Http1Client(link.url, headers, link.tls, guard=link.guard)

    def headers(self) -> dict[str, str]:
        headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            MCP_PROTOCOL_VERSION_HEADER: self.protocol_version,
        }
        if self.link.session_id is not None:
            headers[MCP_SESSION_ID] = self.link.session_id
        return headers

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        progress: ProgressFn | None,
        meta: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        return await self.request(
            "tools/call",
            tool_call_params(name, arguments, meta),
            progress=progress,
            name_header=name,
        )

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        progress: ProgressFn | None = None,
        name_header: str | None = None,
    ) -> dict[str, Any]:
        """The result dict of one request; MCPError for a JSON-RPC error (its code kept)."""
        request_id = next(self._ids)
        if progress is not None:
            params = dict(params or {})
            params["_meta"] = {**(params.get("_meta") or {}), "progressToken": request_id}
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        headers = (
            {MCP_NAME_HEADER: encode_header_value(name_header)} if name_header is not None else {}
        )
        answered = False
        try:
            try:
                response = await self._h1.post(json.dumps(message).encode(), headers)
            except HttpError as exc:
                raise self._lost(exc) from None
            try:
                reply = await self._reply(response, request_id, progress)
            except (MCPError, UseSdkPath) as exc:
                # An answer (an error, a redirect) means the backend is not working on it, except
                # when the stream broke before the answer came.
                answered = not (isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED)
                raise
            finally:
                await response.aclose()
            answered = True
        finally:
            if not answered:
                # Whatever stopped us (the caller's timeout or cancellation, a broken stream), the
                # backend may still be working on it: tell it to stop, as the SDK does.
                self._spawn(self._cancel(request_id))
        return result_of(reply)

    async def _send(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self.link.http.send(request, stream=True)
        except httpx2.TransportError as exc:
            raise self._lost(exc) from None

    def _lost(self, exc: Exception) -> MCPError:
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        self.on_lost(reason)
        return MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")

    async def _reply(
        self, response: Any, request_id: int, progress: ProgressFn | None
    ) -> dict[str, Any]:
        status = response.status_code
        if status == 404 and self.link.session_id is not None:
            self.link.on_expired()  # see HttpLink.saw
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        try:
            if status == 200 and kind == "application/json":
                return json.loads(await response.aread())
            if status == 200 and kind == "text/event-stream":
                return await self._stream(response, request_id, progress)
            if 300 <= status < 400:
                raise UseSdkPath(f"HTTP {status}")
            if status == 202:
                raise MCPError(
                    code=types.INVALID_REQUEST,
                    message="server answered a request with 202 Accepted",
                )
            if status >= 400:
                return await self._http_error(response)
            raise MCPError(
                code=types.INVALID_REQUEST,
                message=f"Unexpected content type: {kind or '(none)'} (HTTP {status})",
            )
        except _TRANSPORT_ERRORS as exc:
            raise self._lost(exc) from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise MCPError(
                code=types.PARSE_ERROR, message=f"Failed to parse the backend's response: {exc}"
            ) from None

    async def _http_error(self, response: Any) -> dict[str, Any]:
        # A server may send the JSON-RPC error in the body at a non-2xx status: keep its code.
        if response.headers.get("content-type", "").lower().startswith("application/json"):
            try:
                body = json.loads(await response.aread())
            except ValueError:
                body = None
            if isinstance(body, dict) and isinstance(body.get("error"), dict):
                return body
        if response.status_code == 404 and self.link.session_id is not None:
            raise MCPError(code=types.INVALID_REQUEST, message="Session terminated")
        raise MCPError(
            code=types.INTERNAL_ERROR,
            message=f"Server returned an error response (HTTP {response.status_code})",
        )

    async def _stream(
        self, response: Any, request_id: int, progress: ProgressFn | None
    ) -> dict[str, Any]:
        """Read the request's SSE stream up to its response, handling what comes before it."""
        last_id: str | None = None
        retry_ms = 0  # the server's `retry:` field: how long to wait before resuming (SEP-1699)
        attempts = 0
        while True:
            events = _events(response)
            try:
                async for event_id, data, retry in events:
                    if event_id:
                        last_id = event_id
                    if retry is not None:
                        retry_ms = min(retry, _LONGEST_RETRY_MS)
                    if data:
                        reply = await self._frame(data, request_id, progress)
                        if reply is not None:
                            await _drain(events)
                            return reply
            except _TRANSPORT_ERRORS:
                if last_id is None:
                    raise
            if last_id is None:
                raise MCPError(
                    code=types.CONNECTION_CLOSED, message="SSE stream ended without a response"
                )
            # A resumable stream that dropped: pick it up where it was (Last-Event-ID), as the SDK does.
            attempts += 1
            if attempts > _RESUME_ATTEMPTS:
                raise MCPError(
                    code=types.CONNECTION_CLOSED,
                    message="SSE stream ended and reconnection attempts were exhausted",
                )
            await response.aclose()
            if retry_ms:
                await asyncio.sleep(retry_ms / 1000)
            headers = {**self.headers(), "accept": "text/event-stream", LAST_EVENT_ID: last_id}
            response = await self._send(
                self.link.http.build_request("GET", self.link.url, headers=headers)
            )
            if response.status_code != 200:
                await response.aclose()
                raise MCPError(
                    code=types.CONNECTION_CLOSED,
                    message=f"SSE stream could not be resumed (HTTP {response.status_code})",
                )

    async def _frame(
        self, data: bytes, request_id: int, progress: ProgressFn | None
    ) -> dict[str, Any] | None:
        message = json.loads(data)
        if not isinstance(message, dict):
            raise MCPError(
                code=types.PARSE_ERROR, message="Failed to parse SSE message: not a JSON-RPC object"
            )
        method = message.get("method")
        if method is None:
            if message.get("id") == request_id:
                return message
            return None  # a response to something else: not ours to resolve
        params = message.get("params")
        if "id" in message:
            self._spawn(self._answer(message["id"], method, params))
            return None
        if (
            method == "notifications/progress"
            and isinstance(params, dict)
            and params.get("progressToken") == request_id
        ):
            if progress is not None:
                await _progress(progress, params)
            return None
        await sdk.deliver_notification(self.session, method, params)
        return None

    async def _answer(self, server_request_id: Any, method: str, params: Any) -> None:
        """A server→client request on our stream: the SDK session's callbacks answer it."""
        try:
            result = await sdk.answer_request(self.session, server_request_id, method, params)
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": server_request_id, "result": result}
        except MCPError as exc:
            reply = {
                "jsonrpc": "2.0",
                "id": server_request_id,
                "error": exc.error.model_dump(mode="json", exclude_none=True),
            }
        except Exception as exc:  # boundary: the backend must get an answer, not a hang
            logger.exception("answering %s from the backend failed", method)
            reply = {
                "jsonrpc": "2.0",
                "id": server_request_id,
                "error": {"code": types.INTERNAL_ERROR, "message": str(exc)},
            }
        await self._post_message(reply)

    async def _cancel(self, request_id: int) -> None:
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "the caller gave up"},
        }
        async with asyncio.timeout(_CANCEL_TIMEOUT):
            await self._post_message(note)

    async def _post_message(self, message: dict[str, Any]) -> None:
        """POST a response or notification (answered 202, no body)."""
        try:
            response = await self.link.http.post(
                self.link.url, content=json.dumps(message), headers=self.headers()
            )
            if response.status_code >= 400:
                logger.debug(
                    "backend refused %s: HTTP %s",
                    message.get("method", "a response"),
                    response.status_code,
                )
        except httpx2.HTTPError as exc:
            logger.debug(
                "could not POST %s to the backend: %s", message.get("method", "a response"), exc
            )

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if (
            not task.cancelled()
            and (exc := task.exception()) is not None
            and not isinstance(exc, TimeoutError)
        ):
            logger.debug("lean HTTP background task failed: %s", exc)

    async def aclose(self) -> None:
        self._h1.close()
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)


def tool_call_params(
    name: str, arguments: Mapping[str, Any] | None, meta: Mapping[str, Any] | None
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    if meta:
        params["_meta"] = dict(meta)
    return params


def result_of(reply: Any) -> dict[str, Any]:
    if not isinstance(reply, dict):
        raise MCPError(
            code=types.PARSE_ERROR,
            message="Failed to parse the backend's response: not a JSON-RPC object",
        )
    if "result" in reply:
        return reply["result"]
    error = reply.get("error")
    if isinstance(error, dict) and isinstance(error.get("code"), int):
        raise MCPError(
            code=error["code"], message=str(error.get("message", "")), data=error.get("data")
        )
    raise MCPError(
        code=types.PARSE_ERROR,
        message="Failed to parse the backend's response: neither result nor error",
    )


async def _progress(progress: ProgressFn, params: dict[str, Any]) -> None:
    value = params.get("progress")
    if isinstance(value, int | float) and not isinstance(value, bool):
        total = params.get("total")
        message = params.get("message")
        await progress(
            value,
            total if isinstance(total, int | float) else None,
            message if isinstance(message, str) else None,
        )


async def _drain(events: AsyncGenerator[Any, None]) -> None:
    """Read the end of a stream whose response came: the server closes it right after, and a
    body read to its end leaves the keep-alive connection reusable (closed early, it is dropped)."""
    try:
        async with asyncio.timeout(_DRAIN_TIMEOUT):
            async for _ in events:
                pass
    except (TimeoutError, httpx2.HTTPError, HttpError, MCPError):
        pass  # the response is in hand; the connection is just not reused
    finally:
        await events.aclose()


async def _events(response: Any) -> AsyncGenerator[tuple[str | None, bytes, int | None], None]:
    """(id, data, retry) of each SSE event in the body; the line ending may be CRLF, LF or CR."""
    buffer = b""
    async for chunk in response.aiter_bytes():
        buffer += chunk
        held = b""
        if buffer.endswith(b"\r"):  # maybe half of a CRLF: wait for the next chunk to tell
            buffer, held = buffer[:-1], b"\r"
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *events, buffer = buffer.split(b"\n\n")
        buffer += held
        if len(buffer) > _MAX_EVENT:
            raise MCPError(
                code=types.PARSE_ERROR, message=f"SSE event larger than {_MAX_EVENT} bytes"
            )
        for event in events:
            parsed = _event(event)
            if parsed is not None:
                yield parsed
    if buffer.strip():
        parsed = _event(buffer)
        if parsed is not None:
            yield parsed


def _event(event: bytes) -> tuple[str | None, bytes, int | None] | None:
    """(id, data, retry in ms) of a `message` event; None for other kinds."""
    event_id: str | None = None
    retry: int | None = None
    kind = b"message"
    data: list[bytes] = []
    for line in event.split(b"\n"):
        if not line or line.startswith(b":"):
            continue
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            data.append(value)
        elif field == b"id":
            event_id = value.decode("utf-8", "replace")
        elif field == b"event":
            kind = value
        elif field == b"retry" and value.isdigit():
            retry = int(value)
    if kind != b"message":
        return None
    return event_id, b"\n".join(data), retry
