"""The MCP HTTP face of every endpoint: Streamable HTTP and the legacy SSE transport.

URLs (token in the header, or an endpoint-scoped token in the URL):
    /mcp/<slug>/             and  /mcp/t/<token>/            Streamable HTTP (POST, GET, DELETE)
    /mcp/<slug>/sse          and  /mcp/t/<token>/sse         legacy SSE stream (2024-11-05)
    /mcp/<slug>/messages     and  /mcp/t/<token>/messages    legacy SSE message POSTs
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from apps.core import hotstate, outage, public_url
from apps.gateway import auth, context, jsonrpc, protocol, resume, state, subscriptions
from apps.gateway.auth import EndpointRef, Principal
from apps.gateway.http import (
    HttpError,
    Request,
    Send,
    respond,
    sse_comment,
    sse_event,
    start_sse,
)
from apps.gateway.jsonrpc import RpcError
from apps.gateway.mailbox import mailbox
from apps.gateway.state import Session
from apps.gateway.streams import (
    SESSION_CLOSED,
    SESSION_MESSAGE,
    STOP,
    STORED_MESSAGE,
    accept_non_request,
    ask_client,
    check_rate,
    endpoint_view,
    listen_for_cancellations,
    outcome_of,
    refuse_batch,
    relay_events,
    require_session,
    session_group,
)
from apps.oauth import resources
from apps.toolsets.events import TOOLS_CHANGED, endpoint_group
from apps.toolsets.exposure import current

logger = logging.getLogger(__name__)

ROUTE = re.compile(
    r"^/mcp/(?:t/(?P<token>[A-Za-z0-9_-]{1,200})|(?P<slug>[a-z0-9][a-z0-9-]{2,63}))/?(?P<tail>sse|messages)?/?$"
)
LEGACY_VERSION = "2024-11-05"


@dataclass
class Route:
    slug: str | None
    url_token: str | None
    tail: str | None


class _TrackedSend:
    """Remembers whether the response has started, so an error can still be answered cleanly."""

    __slots__ = ("send", "started")

    def __init__(self, send: Send) -> None:
        self.send = send
        self.started = False

    async def __call__(self, message: dict[str, Any]) -> None:
        self.started = True
        await self.send(message)


class Gateway:
    """Raw ASGI app for `/mcp/...`; everything else is Django's."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        request = Request(scope, receive)
        tracked = _TrackedSend(send)
        try:
            await self._handle(request, tracked)
        except HttpError as exc:
            await respond(tracked, exc.status, exc.body, exc.headers)
        except ConnectionAbortedError:
            pass
        except hotstate.OUTAGE_ERRORS as exc:
            outage.note(exc)
            if not tracked.started:
                await respond(tracked, 503, outage.BODY, outage.HEADERS)
        except Exception:
            # Never the server's own 500 page: a JSON-RPC internal error, if the response has not begun.
            logger.exception("gateway error on %s %s", request.method, request.path)
            if not tracked.started:
                await respond(
                    tracked,
                    500,
                    jsonrpc.error(None, RpcError(jsonrpc.INTERNAL_ERROR, "Internal error")),
                )

    async def _handle(self, request: Request, send: Send) -> None:
        match = ROUTE.match(request.path)
        if match is None:
            raise HttpError(404, {"error": "not_found", "message": "No such MCP endpoint"})
        route = Route(match["slug"], match["token"], match["tail"])
        _check_origin(request)
        public_url.serving(public_url.scope_origin(request.scope, request.headers))
        principal = await _authenticate(request, route)
        endpoint = await auth.endpoint_for(principal, route.slug)
        if endpoint is None:
            raise HttpError(404, {"error": "not_found", "message": "No such MCP endpoint"})
        await listen_for_cancellations()
        await subscriptions.listen_for_updates()
        handler = {
            (None, "POST"): _post,
            (None, "GET"): _get_stream,
            (None, "DELETE"): _delete,
            ("sse", "GET"): _legacy_stream,
            ("messages", "POST"): _legacy_post,
        }.get((route.tail, request.method))
        if handler is None:
            allowed = {None: "GET, POST, DELETE", "sse": "GET", "messages": "POST"}[route.tail]
            raise HttpError(405, {"error": "method_not_allowed"}, [(b"allow", allowed.encode())])
        await handler(request, send, principal, endpoint, route)


# -- security ------------------------------------------------------------------------


def _check_origin(request: Request) -> None:
    """DNS-rebinding protection: Host must be ours, and so must Origin when a browser sends one."""
    allowed = settings.ALLOWED_HOSTS
    host = request.headers.get("host", "")
    if not validate_host(split_domain_port(host)[0], allowed):
        raise HttpError(421, {"error": "invalid_host", "message": f"Host {host!r} is not allowed"})
    origin = request.headers.get("origin")
    if origin and origin != "null":
        origin_host = re.sub(r"^[a-z][a-z0-9+.-]*://", "", origin.lower()).split("/")[0]
        if (
            not validate_host(split_domain_port(origin_host)[0], allowed)
            and origin not in settings.CSRF_TRUSTED_ORIGINS
        ):
            raise HttpError(
                403, {"error": "invalid_origin", "message": f"Origin {origin!r} is not allowed"}
            )


async def _authenticate(request: Request, route: Route) -> Principal:
    header = request.headers.get("authorization", "")
    raw = route.url_token or (header[7:].strip() if header[:7].lower() == "bearer " else "")
    if not raw:
        raise _unauthorized(
            request,
            route,
            "missing_token",
            "Send Authorization: Bearer <token> (create one on your endpoint page, or sign in with OAuth)",
        )
    principal = await auth.principal_for(raw)
    if principal is None:
        raise _unauthorized(
            request, route, "invalid_token", "The access token is invalid, expired or revoked"
        )
    if not principal.mcp_allowed:
        raise HttpError(
            403,
            {
                "error": "insufficient_scope",
                "message": "This is an API token; MCP endpoints need a token with the mcp scope",
            },
            [
                (
                    b"www-authenticate",
                    b'Bearer realm="mcphub", error="insufficient_scope", scope="mcp"',
                )
            ],
        )
    if route.url_token and principal.scope_endpoint_id is None:
        raise _unauthorized(
            request,
            route,
            "invalid_token",
            "Only a token scoped to one endpoint may be used in the URL",
        )
    if principal.is_oauth and (route.url_token or route.slug != principal.audience_slug):
        # RFC 8707: the token's audience is one endpoint; OAuth tokens never travel in URLs.
        raise _unauthorized(
            request, route, "invalid_token", "This access token was not issued for this endpoint"
        )
    return principal


def _unauthorized(request: Request, route: Route, code: str, message: str) -> HttpError:
    """401 with the challenge MCP clients follow to the endpoint's protected resource metadata."""
    params = ['realm="mcphub"']
    if route.slug is not None:
        # Host passed _check_origin (one of ALLOWED_HOSTS): safe to echo.
        origin = public_url.scope_origin(request.scope, request.headers)
        params += [
            f'resource_metadata="{resources.metadata_url(origin, route.slug)}"',
            f'scope="{resources.SCOPE}"',
        ]
    if code != "missing_token":
        params += [f'error="{code}"', f'error_description="{message}"']
    challenge = "Bearer " + ", ".join(params)
    return HttpError(
        401, {"error": code, "message": message}, [(b"www-authenticate", challenge.encode())]
    )


# -- Streamable HTTP -----------------------------------------------------------------


async def _post(
    request: Request, send: Send, principal: Principal, endpoint: EndpointRef, route: Route
) -> None:
    _require_json_content(request)
    if not (request.accepts("application/json") or request.accepts("text/event-stream")):
        raise HttpError(
            406,
            {"error": "not_acceptable", "message": "Accept application/json and text/event-stream"},
        )
    message = await _read_message(request)
    if isinstance(message, list):
        from apps.gateway.batch import handle_batch

        await handle_batch(request, send, message, principal, endpoint)
        return
    kind = _kind(message)
    session_id = request.headers.get("mcp-session-id")
    version_header = request.headers.get("mcp-protocol-version")
    if kind == "request" and message["method"] == "initialize":
        session_id = None
    snap = await state.snapshot(
        session_id=session_id,
        endpoint_id=endpoint.id,
        rate_key=principal.token_prefix,
        limit=principal.rate_limit,
    )
    check_rate(snap)
    if kind == "request" and message["method"] == "initialize":
        await _initialize(send, message, principal, endpoint, snap.endpoint_version)
        return
    if version_header in MODERN_PROTOCOL_VERSIONS or (
        kind == "request" and message["method"] == "server/discover"
    ):
        from apps.gateway.modern import handle_modern

        await handle_modern(
            request, send, message, kind, principal, endpoint, snap.endpoint_version
        )
        return
    session = require_session(session_id, snap.session, principal, endpoint)
    if version_header is not None and version_header not in HANDSHAKE_PROTOCOL_VERSIONS:
        raise HttpError(
            400,
            jsonrpc.error(
                message.get("id"),
                RpcError(
                    jsonrpc.INVALID_REQUEST, f"Unsupported MCP-Protocol-Version: {version_header}"
                ),
            ),
        )
    if kind != "request":
        await accept_non_request(message, kind, session)
        await respond(send, 202)
        return
    view = await endpoint_view(endpoint, snap.endpoint_version)
    responder = StreamResponder(send, message["id"], request.accepts("text/event-stream"), session)
    ctx = context.Context(principal, endpoint, view, session, session.protocol_version, responder)
    await _run_request(request, ctx, message, responder, session.id)


def _require_json_content(request: Request) -> None:
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise HttpError(
            415,
            {"error": "unsupported_media_type", "message": "Content-Type must be application/json"},
        )


async def _read_message(request: Request) -> Any:
    body = await request.body(settings.MCPHUB_MAX_REQUEST_BYTES)
    try:
        message = jsonrpc.loads(body)
    except RpcError as exc:
        raise HttpError(400, jsonrpc.error(None, exc)) from None
    return message


def _kind(message: Any) -> str:
    try:
        return jsonrpc.kind(message)
    except RpcError as exc:
        request_id = (
            message.get("id")
            if isinstance(message, dict) and jsonrpc._valid_id(message.get("id"))
            else None
        )
        raise HttpError(400, jsonrpc.error(request_id, exc)) from None


async def _initialize(
    send: Send,
    message: dict[str, Any],
    principal: Principal,
    endpoint: EndpointRef,
    version: object,
) -> None:
    params = message.get("params") or {}
    negotiated = protocol.negotiate(params.get("protocolVersion"))
    session = Session.new(
        endpoint_id=endpoint.id,
        user_id=principal.user_id,
        protocol_version=negotiated,
        client_capabilities=_dict(params.get("capabilities")),
        client_info=_dict(params.get("clientInfo")),
    )
    await state.save_session(session)
    body = jsonrpc.dumps(
        jsonrpc.result(message["id"], protocol.initialize_result(negotiated))
    ).encode()
    await respond(
        send,
        200,
        body,
        [(b"content-type", b"application/json"), (b"mcp-session-id", session.id.encode())],
    )


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


async def _run_request(
    request: Request,
    ctx: context.Context,
    message: dict[str, Any],
    responder: StreamResponder,
    session_id: str,
) -> None:
    """Run one request; a client that disconnects or cancels cancels the backend call too."""
    task = asyncio.ensure_future(
        protocol.dispatch(ctx, message["method"], message.get("params") or {})
    )
    watcher = asyncio.ensure_future(
        _watch_disconnect(request, lambda: task.cancel() if not responder.detach() else None)
    )

    async def conclude() -> None:
        # Watched until the answer is written: the stream's last events (progress still being
        # delivered, the response) may go out after the outcome, and a client that leaves then
        # must still find them, published, on its resumed stream.
        try:
            await responder.finish(await outcome_of(message, task, session_id))
        finally:
            watcher.cancel()

    # Shielded: a server may cancel a request's handler once its client left, and a detached
    # request must go on to store its answer for the client's resumed stream.
    concluding = asyncio.ensure_future(conclude())
    _concluding.add(concluding)
    concluding.add_done_callback(_concluding.discard)
    await asyncio.shield(concluding)


_concluding: set[asyncio.Future[None]] = set()


async def _watch_disconnect(request: Request, on_disconnect: Any) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            on_disconnect()
            return


class StreamResponder:
    """Answers one POST: plain JSON unless something must be streamed first, then SSE.

    A session's SSE events carry ids and are stored (apps/gateway/resume.py): when the connection
    drops mid-stream the request goes on, detached, and the client resumes with Last-Event-ID.
    """

    def __init__(
        self,
        send: Send,
        request_id: Any,
        sse_ok: bool,
        session: Session | None,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        self.send = send
        self.request_id = request_id
        self.can_request = sse_ok
        self.sse_ok = sse_ok
        self.session = session
        self.headers = headers or []
        self.streaming = False
        self.stream_id = resume.post_stream_id(session.id) if session is not None else None
        self.detached = False
        self._lock = asyncio.Lock()
        self._resynced = False
        self._announcing: asyncio.Future[None] | None = None

    def detach(self) -> bool:
        """The client left: True if it can resume (the stream had begun), so the request goes on.

        From here on each event is published to the stream's group for the resumed stream, after
        one `STREAM_RESYNC`: a client may resume before this process sees it leave, and the
        events written meanwhile to the closed connection are only in the store."""
        self.detached = self.streaming and self.stream_id is not None
        if self.detached:
            self._announcing = asyncio.ensure_future(self._announce())
        return self.detached

    async def _announce(self) -> None:
        async with self._lock:
            await self._resync()

    async def _resync(self) -> None:
        """Tell a resumed stream to read the store again, once, before any event published live."""
        if not self._resynced:
            self._resynced = True
            await mailbox().publish(
                resume.stream_group(self.stream_id), {"type": resume.STREAM_RESYNC}
            )

    async def _event(self, message: dict[str, Any]) -> None:
        async with self._lock:
            if not self.streaming:
                self.streaming = True
                await start_sse(self.send, self.headers)
            await self._write(jsonrpc.dumps(message), last=False)

    async def _write(self, data: str, *, last: bool) -> None:
        if self.stream_id is None:
            await sse_event(self.send, data, event="message", more=not last)
            return
        event = await resume.append(self.stream_id, data, last=last)
        if self.detached:
            await self._resync()
            await mailbox().publish(
                resume.stream_group(self.stream_id),
                {"type": resume.STREAM_EVENT, "id": event.id, "data": data, "last": last},
            )
        else:
            await sse_event(self.send, data, event="message", event_id=event.id, more=not last)
            if last:
                # The connection may be gone before this process notices (then a resumed stream
                # waits on the group): the answer is in the store, and the resync points there.
                await self._resync()

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        if self.sse_ok:
            await self._event(jsonrpc.notification(method, params))

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await ask_client(self._event, method, params)

    async def finish(self, outcome: dict[str, Any]) -> None:
        body = jsonrpc.render(outcome)
        async with self._lock:
            if self.streaming:
                await self._write(body, last=True)
            elif self.detached:
                return
            else:
                await respond(
                    self.send,
                    200,
                    body.encode(),
                    [(b"content-type", b"application/json"), *self.headers],
                )


async def _get_stream(
    request: Request, send: Send, principal: Principal, endpoint: EndpointRef, route: Route
) -> None:
    if not request.accepts("text/event-stream"):
        raise HttpError(406, {"error": "not_acceptable", "message": "Accept text/event-stream"})
    session_id = request.headers.get("mcp-session-id")
    snap = await state.snapshot(
        session_id=session_id,
        endpoint_id=endpoint.id,
        rate_key=principal.token_prefix,
        limit=principal.rate_limit,
    )
    check_rate(snap)
    session = require_session(session_id, snap.session, principal, endpoint)
    last_event_id = request.headers.get("last-event-id")
    resumed = resume.parse(last_event_id, session.id) if last_event_id else None
    await start_sse(send, [(b"mcp-session-id", session.id.encode())])
    if resumed is not None and resumed[0] != resume.get_stream_id(session.id):
        await _resume_post_stream(request, send, *resumed)
        return
    stream_id = resume.get_stream_id(session.id)

    async def ready() -> None:
        # The headers leave with the first body bytes: a comment opens the stream as soon as
        # this process listens for the session's messages, not at the first keep-alive 15 s later.
        await sse_comment(send, "open")
        for event in await resume.replay(stream_id, resumed[1]) if resumed else ():
            await sse_event(send, event.data, event="message", event_id=event.id)

    await _pump(
        request, send, session, endpoint, event_name="message", on_ready=ready, stream_id=stream_id
    )


async def _resume_post_stream(request: Request, send: Send, stream_id: str, after: str) -> None:
    """A POST's dropped stream, continued: the stored events after `after`, then the rest as they come.

    The store is read after joining the stream's group (no event falls between), and again at
    each `STREAM_RESYNC` (StreamResponder.detach); events published live follow the resync.
    Each event is sent once, in the store's order."""
    seen: set[str] = set()
    position = after  # of the last event sent

    def take(event: resume.Event) -> bool:
        nonlocal position
        if event.id in seen:
            return False
        seen.add(event.id)
        position = event.id.rpartition("/")[2]
        return True

    async def from_store() -> list[resume.Event]:
        return [event for event in await resume.replay(stream_id, position) if take(event)]

    async def replay() -> list[dict[str, Any]] | None:
        events = await from_store()
        for event in events:
            await sse_event(send, event.data, event="message", event_id=event.id)
        return STOP if any(event.last for event in events) else None

    async def translate(event: dict[str, Any]) -> list[Any]:
        if event.get("type") == resume.STREAM_RESYNC:
            return await from_store()
        if event.get("type") != resume.STREAM_EVENT:
            return []
        stored = resume.Event(event["id"], event["data"], event["last"])
        return [stored] if take(stored) else []

    await relay_events(
        request,
        send,
        [resume.stream_group(stream_id)],
        translate,
        event_name="message",
        on_ready=replay,
    )


async def _pump(
    request: Request,
    send: Send,
    session: Session,
    endpoint: EndpointRef,
    *,
    event_name: str,
    on_ready: Any = None,
    stream_id: str | None = None,
) -> None:
    """Relay this session's server→client messages until the client leaves or the session ends."""
    groups = [endpoint_group(endpoint.id), session_group(session.id)]
    await relay_events(
        request,
        send,
        groups,
        _outgoing,
        event_name=event_name,
        on_ready=on_ready,
        stream_id=stream_id,
    )


def _outgoing(event: dict[str, Any]) -> list[dict[str, Any]]:
    if event.get("type") == SESSION_CLOSED:
        return STOP
    if event.get("type") == TOOLS_CHANGED:
        return [jsonrpc.notification("notifications/tools/list_changed")]
    if event.get("type") == SESSION_MESSAGE:
        return [event["message"]]
    if event.get("type") == STORED_MESSAGE:
        return [resume.Event(event["id"], event["data"], False)]
    return []


async def _delete(
    request: Request, send: Send, principal: Principal, endpoint: EndpointRef, route: Route
) -> None:
    session_id = request.headers.get("mcp-session-id")
    session = await state.load_session(session_id) if session_id else None
    require_session(session_id, session, principal, endpoint)
    await state.delete_session(session_id)
    await mailbox().publish(session_group(session_id), {"type": SESSION_CLOSED})
    await respond(send, 200)


# -- legacy SSE (2024-11-05) ---------------------------------------------------------


async def _legacy_stream(
    request: Request, send: Send, principal: Principal, endpoint: EndpointRef, route: Route
) -> None:
    snap = await state.snapshot(
        session_id=None,
        endpoint_id=endpoint.id,
        rate_key=principal.token_prefix,
        limit=principal.rate_limit,
    )
    check_rate(snap)
    session = Session.new(
        endpoint_id=endpoint.id,
        user_id=principal.user_id,
        protocol_version=LEGACY_VERSION,
        transport="sse",
    )
    await state.save_session(session)
    base = request.path.rstrip("/").rsplit("/", 1)[0]
    await start_sse(send)

    async def announce() -> None:
        await sse_event(send, f"{base}/messages?session_id={session.id}", event="endpoint")

    try:
        await _pump(request, send, session, endpoint, event_name="message", on_ready=announce)
    finally:
        await state.delete_session(session.id)


async def _legacy_post(
    request: Request, send: Send, principal: Principal, endpoint: EndpointRef, route: Route
) -> None:
    _require_json_content(request)
    session_id = request.query_value("session_id")
    snap = await state.snapshot(
        session_id=session_id,
        endpoint_id=endpoint.id,
        rate_key=principal.token_prefix,
        limit=principal.rate_limit,
    )
    check_rate(snap)
    session = require_session(session_id, snap.session, principal, endpoint)
    message = await _read_message(request)
    if isinstance(message, list):
        raise refuse_batch(session.protocol_version)
    kind = _kind(message)
    await respond(send, 202, b"Accepted")
    if kind != "request":
        await accept_non_request(message, kind, session)
        return
    asyncio.ensure_future(
        _legacy_request(message, session, principal, endpoint, snap.endpoint_version)
    )


async def _legacy_request(
    message: dict[str, Any],
    session: Session,
    principal: Principal,
    endpoint: EndpointRef,
    version: object,
) -> None:
    emitter = SessionEmitter(session.id)
    params = message.get("params") or {}
    try:
        if message["method"] == "initialize":
            session.protocol_version = protocol.negotiate(params.get("protocolVersion"))
            session.client_capabilities = _dict(params.get("capabilities"))
            session.client_info = _dict(params.get("clientInfo"))
            await state.save_session(session)
            outcome = jsonrpc.result(
                message["id"], protocol.initialize_result(session.protocol_version)
            )
        else:
            view = await current(endpoint.id, version, page_size=settings.MCPHUB_LIST_PAGE_SIZE)
            ctx = context.Context(
                principal, endpoint, view, session, session.protocol_version, emitter
            )
            outcome = jsonrpc.result(
                message["id"], await protocol.dispatch(ctx, message["method"], params)
            )
    except RpcError as exc:
        outcome = jsonrpc.error(message["id"], exc)
    except Exception:
        logger.exception("internal error in %s", message.get("method"))
        outcome = jsonrpc.error(message["id"], RpcError(jsonrpc.INTERNAL_ERROR, "Internal error"))
    await emitter.send_message(json.loads(jsonrpc.render(outcome)))


class SessionEmitter:
    """Server→client traffic for a legacy SSE session, delivered by whichever process holds its stream."""

    can_request = True

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id

    async def send_message(self, message: dict[str, Any]) -> None:
        await mailbox().publish(
            session_group(self.session_id), {"type": SESSION_MESSAGE, "message": message}
        )

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.send_message(jsonrpc.notification(method, params))

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await ask_client(self.send_message, method, params)
