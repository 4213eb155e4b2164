"""What the gateway's HTTP transports share (Streamable HTTP, batches, stateless 2026, legacy SSE):
session groups and the events sent to them, the rate and session checks, a request's JSON-RPC
outcome (cancellable by notifications/cancelled from any process), server→client requests, and
relaying a group's events to a client as SSE."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from django.conf import settings

from apps.core import hotstate, outage
from apps.gateway import jsonrpc, resume, state
from apps.gateway.auth import EndpointRef, Principal
from apps.gateway.http import HttpError, Request, Send, end_stream, sse_comment, sse_event
from apps.gateway.jsonrpc import RpcError
from apps.gateway.mailbox import mailbox
from apps.gateway.state import Session
from apps.toolsets.exposure import EndpointView, current

logger = logging.getLogger(__name__)

KEEPALIVE_SECONDS = 15.0
CLIENT_REPLY_SECONDS = 300.0
WEB_GROUP = "mcphub.web"
SESSION_CLOSED = "session.closed"
SESSION_MESSAGE = "session.message"
# A message already in the session's GET stream store, with its event id.
STORED_MESSAGE = "session.stored"
CANCEL = "request.cancel"


def session_group(session_id: str) -> str:
    return f"mcphub.session.{session_id}"


# Requests running in this process, by (session id, JSON-RPC id): for notifications/cancelled.
_running: dict[tuple[str, str], asyncio.Task[Any]] = {}


def refuse_batch(version: str) -> HttpError:
    """Batches were in MCP 2025-03-26 only: later versions (and legacy SSE) answer -32600."""
    return HttpError(
        400,
        jsonrpc.error(
            None,
            RpcError(
                jsonrpc.INVALID_REQUEST,
                f"Invalid Request: JSON-RPC batches are not supported in MCP {version}",
            ),
        ),
    )


def check_rate(snap: state.Snapshot) -> None:
    if snap.retry_after is not None:
        raise HttpError(
            429,
            {
                "error": "rate_limited",
                "message": f"Too many requests for this token; retry in {snap.retry_after} s",
            },
            [(b"retry-after", str(snap.retry_after).encode())],
        )


def require_session(
    session_id: str | None, session: Session | None, principal: Principal, endpoint: EndpointRef
) -> Session:
    if not session_id:
        raise HttpError(
            400,
            jsonrpc.error(
                None,
                RpcError(
                    jsonrpc.INVALID_REQUEST,
                    "Bad Request: Mcp-Session-Id header is required (send initialize first)",
                ),
            ),
        )
    if (
        session is None
        or session.endpoint_id != endpoint.id
        or session.user_id != principal.user_id
    ):
        raise HttpError(
            404,
            jsonrpc.error(
                None,
                RpcError(jsonrpc.SESSION_NOT_FOUND, "Session not found: initialize a new session"),
            ),
        )
    return session


async def endpoint_view(endpoint: EndpointRef, version: object) -> EndpointView:
    view = await current(endpoint.id, version, page_size=settings.MCPHUB_LIST_PAGE_SIZE)
    if view is None:
        raise HttpError(404, {"error": "not_found", "message": "No such MCP endpoint"})
    return view


async def accept_non_request(message: dict[str, Any], kind: str, session: Session) -> None:
    if kind == "response":
        await mailbox().deliver_reply(str(message["id"]), message)
    elif message["method"] == "notifications/cancelled":
        request_id = (message.get("params") or {}).get("requestId")
        if request_id is not None:
            await mailbox().publish(
                WEB_GROUP, {"type": CANCEL, "session": session.id, "request": str(request_id)}
            )


async def outcome_of(
    message: dict[str, Any], task: asyncio.Future[Any], session_id: str
) -> dict[str, Any]:
    """The JSON-RPC answer to `message` once its dispatch `task` ends (cancellable meanwhile)."""
    key = (session_id, str(message["id"]))
    _running[key] = task
    try:
        return jsonrpc.result(message["id"], await task)
    except RpcError as exc:
        return jsonrpc.error(message["id"], exc)
    except asyncio.CancelledError:
        if not task.cancelled():
            raise
        return jsonrpc.error(message["id"], RpcError(jsonrpc.INTERNAL_ERROR, "Request cancelled"))
    except hotstate.OUTAGE_ERRORS as exc:
        outage.note(exc)
        return jsonrpc.error(message["id"], RpcError(jsonrpc.INTERNAL_ERROR, outage.MESSAGE))
    except Exception:
        logger.exception("internal error in %s", message["method"])
        return jsonrpc.error(message["id"], RpcError(jsonrpc.INTERNAL_ERROR, "Internal error"))
    finally:
        _running.pop(key, None)


_cancel_listeners: set[asyncio.AbstractEventLoop] = set()


async def listen_for_cancellations() -> None:
    """notifications/cancelled may reach any process: each one hears them and checks its own."""
    loop = asyncio.get_running_loop()
    if loop in _cancel_listeners:
        return
    _cancel_listeners.add(loop)
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await mailbox().join(WEB_GROUP, queue)
    loop.create_task(_cancel_loop(queue), name="mcphub-cancellations")


async def _cancel_loop(queue: asyncio.Queue[dict[str, Any]]) -> None:
    while True:
        event = await queue.get()
        task = _running.get((event.get("session", ""), event.get("request", "")))
        if event.get("type") == CANCEL and task is not None:
            task.cancel()


async def ask_client(deliver: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Send a server→client request through `deliver` and wait for the answer, posted anywhere."""
    request_id = f"mcphub-{uuid.uuid4().hex}"
    box = mailbox()
    reply = await box.expect_reply(request_id)
    try:
        await deliver({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        answer = await asyncio.wait_for(reply, CLIENT_REPLY_SECONDS)
    finally:
        box.forget_reply(request_id)
    if "error" in answer:
        error = answer["error"] if isinstance(answer["error"], dict) else {}
        raise RpcError(
            int(error.get("code", jsonrpc.INTERNAL_ERROR)),
            str(error.get("message", "client error")),
        )
    return answer.get("result") or {}


async def relay_events(
    request: Request,
    send: Send,
    groups: list[str],
    translate: Any,
    *,
    event_name: str,
    on_ready: Any = None,
    stream_id: str | None = None,
) -> None:
    """Write the messages `translate(event)` (or its coroutine) returns for each event of `groups`
    as SSE, with keepalives, until the client leaves, an event translates to STOP or `on_ready`
    returns STOP.
    With `stream_id`, each message is stored for resumption and sent with its event id; a
    stored `resume.Event` is sent as it is, and ends the stream if it is the last."""
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=1000)
    box = mailbox()
    for group in groups:
        await box.join(group, queue)
    stop = on_ready is not None and await on_ready() is STOP
    disconnect = asyncio.ensure_future(wait_disconnect(request))
    try:
        while not stop and not disconnect.done():
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait(
                {getter, disconnect}, timeout=KEEPALIVE_SECONDS, return_when=asyncio.FIRST_COMPLETED
            )
            if getter not in done:
                getter.cancel()
                if not disconnect.done():
                    await sse_comment(send)
                continue
            outgoing = translate(getter.result())
            if not isinstance(outgoing, list):  # a coroutine: it reads before it answers
                outgoing = await outgoing
            if outgoing is STOP:
                break
            for message in outgoing:
                if isinstance(message, resume.Event):
                    await sse_event(send, message.data, event=event_name, event_id=message.id)
                    stop = stop or message.last
                elif stream_id is not None:
                    event = await resume.append(stream_id, jsonrpc.dumps(message))
                    await sse_event(send, event.data, event=event_name, event_id=event.id)
                else:
                    await sse_event(send, jsonrpc.dumps(message), event=event_name)
    finally:
        # Read before leaving the groups: a cancelled watcher is done too once `leave` yields.
        client_left = disconnect.done()
        disconnect.cancel()
        for group in groups:
            await box.leave(group, queue)
    if not client_left:
        await end_stream(send)


STOP: list[dict[str, Any]] = []  # compared by identity: "end the stream"


async def wait_disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass
