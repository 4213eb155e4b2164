"""JSON-RPC batches on Streamable HTTP, for sessions that negotiated MCP 2025-03-26.

That version allowed a POST to carry an array of requests, notifications and responses; 2025-06-18
removed batching, so other sessions get -32600. The requests of a batch run concurrently; their
answers go back as one JSON array, or, once anything must be streamed first (progress, a
server→client request), as SSE events on one stream, each answer as it is ready.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from apps.gateway import context, jsonrpc, protocol, state, streams
from apps.gateway.auth import EndpointRef, Principal
from apps.gateway.http import HttpError, Request, Send, end_stream, respond, sse_event, start_sse
from apps.gateway.jsonrpc import RpcError

BATCH_VERSION = "2025-03-26"
# One request per message is what clients send today; a batch is a handful. The cap keeps one POST
# from starting thousands of backend calls at once past the per-token rate limit.
MAX_BATCH = 100


async def handle_batch(
    request: Request, send: Send, messages: list[Any], principal: Principal, endpoint: EndpointRef
) -> None:
    version_header = request.headers.get("mcp-protocol-version")
    if version_header in MODERN_PROTOCOL_VERSIONS:
        raise streams.refuse_batch(version_header)
    session_id = request.headers.get("mcp-session-id")
    snap = await state.snapshot(
        session_id=session_id,
        endpoint_id=endpoint.id,
        rate_key=principal.token_prefix,
        limit=principal.rate_limit,
    )
    streams.check_rate(snap)
    session = streams.require_session(session_id, snap.session, principal, endpoint)
    if session.protocol_version != BATCH_VERSION:
        raise streams.refuse_batch(session.protocol_version)
    if not messages or len(messages) > MAX_BATCH:
        problem = (
            "an empty batch"
            if not messages
            else f"a batch of {len(messages)} messages (at most {MAX_BATCH})"
        )
        raise HttpError(
            400,
            jsonrpc.error(None, RpcError(jsonrpc.INVALID_REQUEST, f"Invalid Request: {problem}")),
        )
    answers, requests = await _sort(messages, session)
    if not requests and not answers:
        await respond(send, 202)
        return
    stream = BatchStream(send, request.accepts("text/event-stream"), answers)
    view = await streams.endpoint_view(endpoint, snap.endpoint_version)
    tasks = [
        asyncio.ensure_future(_answer(principal, endpoint, view, session, message, stream))
        for message in requests
    ]
    watcher = asyncio.ensure_future(streams.wait_disconnect(request))
    watcher.add_done_callback(lambda _: [task.cancel() for task in tasks])
    try:
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        watcher.cancel()
    if not watcher.cancelled() and watcher.done():
        return  # the client left: nobody to answer
    await stream.close()


async def _sort(
    messages: list[Any], session: state.Session
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(error answers for invalid members, the requests to run); notifications and responses are handled now."""
    answers, requests = [], []
    for message in messages:
        try:
            kind = jsonrpc.kind(message)
        except RpcError as exc:
            answers.append(jsonrpc.error(None, exc))
            continue
        if kind == "request" and message["method"] == "initialize":
            answers.append(
                jsonrpc.error(
                    message["id"],
                    RpcError(
                        jsonrpc.INVALID_REQUEST,
                        "Invalid Request: initialize must not be part of a batch",
                    ),
                )
            )
        elif kind == "request":
            requests.append(message)
        else:
            await streams.accept_non_request(message, kind, session)
    return answers, requests


async def _answer(
    principal: Principal,
    endpoint: EndpointRef,
    view: Any,
    session: state.Session,
    message: dict[str, Any],
    stream: BatchStream,
) -> None:
    ctx = context.Context(
        principal, endpoint, view, session, session.protocol_version, _Member(stream)
    )
    task = asyncio.ensure_future(
        protocol.dispatch(ctx, message["method"], message.get("params") or {})
    )
    try:
        outcome = await streams.outcome_of(message, task, session.id)
    except asyncio.CancelledError:
        task.cancel()
        raise
    await stream.answer(outcome)


class BatchStream:
    """One response for the whole batch: a JSON array, or an SSE stream once something streams."""

    def __init__(self, send: Send, sse_ok: bool, answers: list[dict[str, Any]]) -> None:
        self.send = send
        self.sse_ok = sse_ok
        self.streaming = False
        self._ready = [jsonrpc.render(answer) for answer in answers]
        self._lock = asyncio.Lock()

    async def event(self, message: dict[str, Any]) -> None:
        async with self._lock:
            if not self.streaming:
                self.streaming = True
                await start_sse(self.send)
                for ready in self._ready:
                    await sse_event(self.send, ready, event="message")
                self._ready.clear()
            await sse_event(self.send, jsonrpc.dumps(message), event="message")

    async def answer(self, outcome: dict[str, Any]) -> None:
        async with self._lock:
            if self.streaming:
                await sse_event(self.send, jsonrpc.render(outcome), event="message")
            else:
                self._ready.append(jsonrpc.render(outcome))

    async def close(self) -> None:
        async with self._lock:
            if self.streaming:
                await end_stream(self.send)
            else:
                body = ("[" + ",".join(self._ready) + "]").encode()
                await respond(self.send, 200, body, [(b"content-type", b"application/json")])


class _Member:
    """One batched request's emitter: its notifications and requests share the batch's stream."""

    def __init__(self, stream: BatchStream) -> None:
        self.stream = stream
        self.can_request = stream.sse_ok

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        if self.stream.sse_ok:
            await self.stream.event(jsonrpc.notification(method, params))

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await streams.ask_client(self.stream.event, method, params)
