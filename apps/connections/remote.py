"""`RemotePool`: the web side of the pool workers, with the same interface as `Pool` (`PoolAPI`).

A call is one message on this process's direct link to the chosen worker and one back
(`link.py`); without a link (the worker offers none, refused it, or cannot be reached) it
is one RPUSH to the worker's inbox and one PUBLISH back on this process's reply channel,
whose subscriber resolves futures by request id as it parses each message (`wire.py` for
the messages, `resp.py` for the client). Celery's own messaging costs 2-4 ms, which is why
tool calls do not go through it. `benchmarks/pool.py`, load 1.3 on a slow day, concurrency 1:
in-process 0.30 ms p50, by link 0.70 ms, by Redis 0.92 ms; CPU per call (caller + worker +
Redis) 0.64 ms by link, 1.05 ms by Redis.

Same-process shortcut (`same_process=True`, what `get_pool()` builds): when the worker that
owns a server (the same rendezvous choice as always) runs in this process, as in a Celery
worker running a chat turn or a run, the call goes to its pool directly (`PoolWorker.call_here`)
instead of out to Redis and back. A server owned by another worker still goes through Redis.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import logging
import time
import uuid
from collections.abc import Mapping
from functools import partial
from typing import Any, Self

import mcp_types as types

from apps.connections.codec import SpecCodec, default_codec
from apps.connections.contract import TASK_METHODS
from apps.connections.errors import (
    CallTimeout,
    HubUnavailable,
    PoolError,
    ServerUnavailable,
    WorkerLost,
)
from apps.connections.hooks import NotificationHook, ProgressFn, Relay
from apps.connections.link import Link, links_key, open_link
from apps.connections.listing import Discovery
from apps.connections.resp import RespClient, RespConnection
from apps.connections.specs import ServerSpec, server_of
from apps.connections.wire import (
    HANDBACK,
    NAME_OPS,
    OPS,
    SPEC_UNKNOWN,
    decode_error,
    dump_any,
    dump_model,
    dumps,
    encode_error,
    handback,
    load_notification,
    load_server_request_params,
    spec_ref,
)
from apps.connections.worker import (
    DEFAULT_PREFIX,
    WORKER_LOST_SECONDS,
    WORKER_TTL_SECONDS,
    draining_key,
    events_channel,
    inbox_key,
    worker_here,
    workers_key,
)

logger = logging.getLogger(__name__)

_WORKERS_REFRESH = 0.5  # seconds a worker list is trusted before asking Redis again
_WATCH_INTERVAL = 0.5  # while calls are pending, how often their workers' heartbeats are checked
_RESCUE_GRACE = 1.0
_REDIS_DOWN = "the hub lost its link to Redis"
_MAX_MOVES = 3  # times one call may be handed back by stopping workers and sent again
_RESUBSCRIBE_WAIT = 0.2
_LOG_FLUSH_TIMEOUT = 5.0
_RELINK_AFTER = 5.0  # a worker that could not be linked to is called through Redis this long
_HAND_OFF_WAIT = 2.0  # for a worker to say it started work handed over, before Celery carries it
_NO_CODEC: Any = object()


class _Pending:
    __slots__ = (
        "future",
        "worker",
        "payload",
        "server",
        "progress",
        "relay",
        "progress_seen",
        "tail",
        "link",
    )

    def __init__(
        self,
        future: asyncio.Future[dict[str, Any]],
        worker: str,
        payload: str,
        server: str,
        progress: ProgressFn | None,
        relay: Relay | None,
    ) -> None:
        self.future = future
        self.worker = worker
        self.payload = payload  # as pushed: a dead worker's inbox gives it back by value (LREM)
        self.server = server
        self.progress = progress
        self.relay = relay
        self.progress_seen = -1
        self.tail: asyncio.Future[None] | None = None  # log lines being delivered, in order
        self.link: Link | None = None  # the direct link it was sent on; None: by Redis

    def fail(self, request_id: str, error: dict[str, Any]) -> None:
        """Answer the call here with `error` (an encoded exception), unless its reply came first."""
        if not self.future.done():
            self.future.set_result({"t": "res", "id": request_id, "err": error})


class RemotePool:
    """Sends pool operations (`PoolAPI`) to the worker that holds each server's connection."""

    def __init__(
        self,
        redis_url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        on_notification: NotificationHook | None = None,
        default_timeout: float = 60.0,
        dispatch_margin: float = 5.0,
        codec: SpecCodec | None = _NO_CODEC,
        same_process: bool = False,
        direct: bool = True,
    ) -> None:
        self.redis_url = redis_url
        self.prefix = prefix
        self.on_notification = on_notification
        self.default_timeout = default_timeout
        self.dispatch_margin = (
            dispatch_margin  # extra wait for the worker's own timeout error to arrive
        )
        self.codec = default_codec() if codec is _NO_CODEC else codec
        # A server whose worker runs in this process is called there directly, not via Redis.
        self.same_process = same_process
        # Calls go to a worker over a direct link (link.py) when it offers one, else by Redis.
        self.direct = direct
        self._links: dict[str, Link] = {}
        self._linking: dict[str, asyncio.Task[Link | None]] = {}
        self._unlinked_until: dict[str, float] = {}
        self.client_id = uuid.uuid4().hex[:12]
        self.reply_channel = f"{prefix}:reply:{self.client_id}"
        self._ids = itertools.count()
        self._pending: dict[str, _Pending] = {}
        self._specs_sent: set[tuple[str, str, str]] = set()
        self._workers: list[str] = []
        self._workers_at = 0.0
        self._watch: asyncio.Task[None] | None = None
        self._routes: dict[str, str] = {}  # server → worker, for the current worker list
        self._redis = RespClient(redis_url)
        self._subscriber: asyncio.Task[None] | None = None
        self._subscribed: asyncio.Future[None] | None = None
        self._listening = False  # the reply subscription is up now (not only once)
        self._sub_conn: RespConnection | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._handoffs: dict[str, tuple[asyncio.Future[bool], Link]] = {}
        self._turn = itertools.count()  # which live worker the next hand-off goes to
        self._takes_none_until: dict[str, float] = {}  # workers that refused work handed over

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the Pool interface ------------------------------------------------------------

    async def call_tool(
        self,
        spec: ServerSpec,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress_callback: ProgressFn | None = None,
        relay: Relay | None = None,
        meta: Mapping[str, Any] | None = None,
        raw: bool = False,
    ) -> Any:
        """As `Pool.call_tool`; with `raw=True` the result is the backend's JSON dict."""
        args = {"name": name, "arguments": dict(arguments) if arguments is not None else None}
        if meta is not None:
            args["meta"] = dict(meta)
        reply = await self._call(
            spec, "call_tool", args, timeout, progress_callback, relay, raw=True
        )
        return reply if raw else types.CallToolResult.model_validate(reply)

    async def task_request(
        self,
        spec: ServerSpec,
        method: str,
        params: Mapping[str, Any],
        *,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        if method not in TASK_METHODS:
            raise ValueError(f"not a task request: {method}")
        args = {"method": method, "params": dict(params)}
        return await self._call(spec, "task_request", args, timeout)

    async def list_tools(
        self, spec: ServerSpec, *, timeout: float | None = None
    ) -> list[types.Tool]:
        return await self._call(spec, "list_tools", {}, timeout)

    async def list_resources(
        self, spec: ServerSpec, *, timeout: float | None = None
    ) -> list[types.Resource]:
        return await self._call(spec, "list_resources", {}, timeout)

    async def list_resource_templates(
        self, spec: ServerSpec, *, timeout: float | None = None
    ) -> list[types.ResourceTemplate]:
        return await self._call(spec, "list_resource_templates", {}, timeout)

    async def list_prompts(
        self, spec: ServerSpec, *, timeout: float | None = None
    ) -> list[types.Prompt]:
        return await self._call(spec, "list_prompts", {}, timeout)

    async def read_resource(
        self,
        spec: ServerSpec,
        uri: str,
        *,
        timeout: float | None = None,
        relay: Relay | None = None,
    ) -> types.ReadResourceResult:
        return await self._call(spec, "read_resource", {"uri": uri}, timeout, relay=relay)

    async def subscribe_resource(
        self, spec: ServerSpec, uri: str, *, timeout: float | None = None
    ) -> None:
        await self._call(spec, "subscribe_resource", {"uri": uri}, timeout)

    async def get_prompt(
        self,
        spec: ServerSpec,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
        relay: Relay | None = None,
    ) -> types.GetPromptResult:
        args = {"name": name, "arguments": dict(arguments) if arguments is not None else None}
        return await self._call(spec, "get_prompt", args, timeout, relay=relay)

    async def complete(
        self,
        spec: ServerSpec,
        ref: types.ResourceTemplateReference | types.PromptReference,
        argument: Mapping[str, str],
        context_arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> types.CompleteResult:
        args = {
            "ref": dump_model(ref),
            "argument": dict(argument),
            "context_arguments": context_arguments,
        }
        return await self._call(spec, "complete", args, timeout)

    async def ping(self, spec: ServerSpec, *, timeout: float | None = None) -> float:
        return await self._call(spec, "ping", {}, timeout)

    async def discover(self, spec: ServerSpec, *, timeout: float | None = None) -> Discovery:
        return await self._call(spec, "discover", {}, timeout)

    async def stderr_tail(self, name: str) -> str:
        return await self._name_call(name, "stderr_tail")

    async def close(self, name: str) -> None:
        await self._name_call(name, "close")

    async def stats(self) -> dict[str, Any]:
        """Every live worker's pool stats, keyed by worker id."""
        workers = await self._live_workers(refresh=True)
        replies = await asyncio.gather(
            *(self._send(w, "stats", {}, 10.0) for w in workers), return_exceptions=True
        )
        return {
            w: (r if not isinstance(r, BaseException) else {"error": str(r)})
            for w, r in zip(workers, replies)
        }

    async def aclose(self) -> None:
        tasks = [t for t in [self._subscriber, *self._background] if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._subscriber, self._subscribed, self._listening = None, None, False
        for link in self._links.values():
            link.close()
        self._links.clear()
        if self._sub_conn is not None:
            self._sub_conn.close()
            self._sub_conn = None
        await self._redis.aclose()

    # -- dispatch ----------------------------------------------------------------------

    async def _call(
        self,
        spec: ServerSpec,
        op: str,
        args: dict[str, Any],
        timeout: float | None,
        progress: ProgressFn | None = None,
        relay: Relay | None = None,
        *,
        raw: bool = False,
    ) -> Any:
        limit = timeout or spec.timeout or self.default_timeout
        body: dict[str, Any] = {"op": op, "a": args, "to": limit, "s": spec_ref(spec)}
        if progress is not None:
            body["prog"] = True
        if relay is not None:
            body["rel"] = relay.methods()
            body["who"] = relay.caller
        for _ in range(_MAX_MOVES):
            worker = await self._route(spec.name)
            here = worker_here(worker) if self.same_process else None
            if here is not None:
                return await here.call_here(op, spec, args, limit, progress, relay)
            sent_key = (worker, spec.name, spec.config_hash)
            for key in ("S", "SE"):  # the spec goes in full only to a worker that has not seen it
                body.pop(key, None)
            if sent_key not in self._specs_sent:
                self._attach_spec(body, spec)
            try:
                try:
                    result = await self._send(
                        worker, op, body, limit, progress, relay, server=spec.name, raw=raw
                    )
                except _ResendSpec:
                    self._attach_spec(body, spec)
                    result = await self._send(
                        worker, op, body, limit, progress, relay, server=spec.name, raw=raw
                    )
            except _Moved:
                continue  # the call never ran: the next live worker takes it
            self._specs_sent.add(sent_key)
            return result
        raise HubUnavailable(
            spec.name, f"server {spec.name!r} is unavailable: pool workers kept stopping"
        )

    def _attach_spec(self, body: dict[str, Any], spec: ServerSpec) -> None:
        # The full spec carries decrypted secrets: on the wire it is encrypted when a codec is set.
        if self.codec is not None:
            body["SE"] = self.codec.encrypt(dumps(spec.to_wire()))
        else:
            body["S"] = spec.to_wire()

    async def _name_call(self, name: str, op: str) -> Any:
        for _ in range(_MAX_MOVES):
            worker = await self._route(server_of(name))  # `name#partition` lives where `name` does
            try:
                return await self._send(
                    worker, op, {"op": op, "a": {"name": name}}, 30.0, server=name
                )
            except _Moved:
                continue
        raise ServerUnavailable(name, f"server {name!r} is unavailable: pool workers kept stopping")

    async def _send(
        self,
        worker: str,
        op: str,
        body: dict[str, Any],
        limit: float,
        progress: ProgressFn | None = None,
        relay: Relay | None = None,
        *,
        server: str = "",
        raw: bool = False,
    ) -> Any:
        if (
            self._subscribed is None
            or not self._subscribed.done()
            or self._subscribed.exception() is not None
        ):
            await self._ensure_subscribed()
        if not self._listening:
            # A reply published while we resubscribe reaches nobody: the caller would wait out its timeout.
            raise HubUnavailable(
                server, f"server {server!r} is unavailable: {_REDIS_DOWN} (reconnecting)"
            )
        request_id = f"{self.client_id}:{next(self._ids)}"
        body["t"] = "call"
        body["op"] = op
        body["id"] = request_id
        body["r"] = self.reply_channel
        future = asyncio.get_running_loop().create_future()
        payload = dumps(body)
        pending = self._pending[request_id] = _Pending(
            future, worker, payload, server, progress, relay
        )
        self._ensure_watch()
        try:
            link = await self._link(worker) if self.direct else None
            try:
                if link is not None:
                    link.send(payload)
                    pending.link = link
                else:
                    await self._redis.call("RPUSH", inbox_key(self.prefix, worker), payload)
            except OSError as exc:
                # Refused: the call was never pushed. Another break may come after it was.
                unsent = isinstance(exc, ConnectionRefusedError)
                raise (HubUnavailable if unsent else ServerUnavailable)(
                    server, f"server {server!r} is unavailable: {_REDIS_DOWN} ({exc})"
                ) from None
            reply = await self._await_reply(future, worker, request_id, limit, server)
            if pending.tail is not None and not pending.tail.done():
                # Log lines the worker sent before the result reach the caller before it too.
                await asyncio.wait({pending.tail}, timeout=_LOG_FLUSH_TIMEOUT)
        finally:
            del self._pending[request_id]
        if "err" in reply:
            if reply["err"]["kind"] == SPEC_UNKNOWN:
                raise _ResendSpec()
            if reply["err"]["kind"] == HANDBACK:
                self._leaving(worker)
                raise _Moved()
            raise decode_error(reply["err"])
        if raw:
            return reply["ok"]
        codec = OPS.get(op) or NAME_OPS[op]
        return codec.load(reply["ok"])

    async def _await_reply(
        self,
        future: asyncio.Future[dict[str, Any]],
        worker: str,
        request_id: str,
        limit: float,
        server: str,
    ) -> dict[str, Any]:
        try:
            async with asyncio.timeout(limit + self.dispatch_margin):
                return await future
        except TimeoutError:
            self._send_cancel(worker, request_id)
            raise CallTimeout(
                server, f"server {server!r}: no reply from pool worker {worker} within {limit:g}s"
            )
        except asyncio.CancelledError:
            self._send_cancel(
                worker, request_id
            )  # lets the worker send notifications/cancelled to the backend
            raise

    def _send_cancel(self, worker: str, request_id: str) -> None:
        self._spawn(self._push(worker, {"t": "cancel", "id": request_id}))

    async def _push(self, worker: str, message: dict[str, Any]) -> None:
        link = self._linked(worker)
        if link is not None:
            link.send(dumps(message))
        else:
            await self._redis.fire("RPUSH", inbox_key(self.prefix, worker), dumps(message))

    # -- work handed over --------------------------------------------------------------

    async def hand_off(self, kind: str, work_id: str) -> bool:
        """Start a chat turn or a run (`kind`, see `worker.take_work`) on a live pool worker, sent
        on this process's direct link to it: True once the worker said it started it.

        False — no worker takes such work over a link, or none said so within `_HAND_OFF_WAIT` —
        means: send it by Celery. A worker that answers late may start it too; the work's own
        claim lets only one of them run it. Spread over the live workers in turn, as Celery's
        queue spreads tasks over whoever asks next."""
        if not self.direct:
            return False
        try:
            workers = await self._live_workers()
        except OSError:
            return False
        now = time.monotonic()
        takers = [w for w in workers if self._takes_none_until.get(w, 0.0) <= now]
        if not takers:
            return False
        worker = takers[next(self._turn) % len(takers)]
        link = await self._link(worker)
        if link is None:
            return False
        request_id = f"{self.client_id}:{next(self._ids)}"
        took: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._handoffs[request_id] = (took, link)
        try:
            link.send(dumps({"t": "work", "id": request_id, "k": kind, "w": work_id}))
            async with asyncio.timeout(_HAND_OFF_WAIT):
                started = await took
        except (OSError, TimeoutError):
            return False
        finally:
            self._handoffs.pop(request_id, None)
        if not started:
            self._takes_none_until[worker] = now + _RELINK_AFTER
        return started

    # -- direct links ------------------------------------------------------------------

    def _linked(self, worker: str) -> Link | None:
        """The link to `worker` if one is open now."""
        link = self._links.get(worker)
        return link if link is not None and not link.closed else None

    async def _link(self, worker: str) -> Link | None:
        """The open link to `worker`, opened now if need be; None: send through Redis."""
        if (link := self._linked(worker)) is not None:
            return link
        if self._unlinked_until.get(worker, 0.0) > time.monotonic():
            return None
        opening = self._linking.get(worker)
        if opening is None:
            opening = self._linking[worker] = self._spawn(self._open_link(worker))
        return await asyncio.shield(opening)

    async def _open_link(self, worker: str) -> Link | None:
        try:
            address = await self._redis.call("HGET", links_key(self.prefix), worker)
            if address is None:
                raise ConnectionError("it offers no direct link")
            link = await open_link(_text(address), partial(self._on_link_message, worker))
            self._links[worker] = link
            return link
        except OSError as exc:  # no link for a while; Redis carries its calls meanwhile
            logger.info("calls to pool worker %s go through Redis: %s", worker, exc)
            self._unlinked_until[worker] = time.monotonic() + _RELINK_AFTER
            return None
        finally:
            self._linking.pop(worker, None)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # -- routing -----------------------------------------------------------------------

    async def _route(self, server: str) -> str:
        if time.monotonic() - self._workers_at > _WORKERS_REFRESH:
            await self._live_workers()
        worker = self._routes.get(server)
        if worker is not None:
            return worker
        workers = self._workers or await self._live_workers(refresh=True)
        if not workers:
            raise HubUnavailable(
                server, f"server {server!r} is unavailable: no pool workers are running"
            )
        worker = self._routes[server] = max(workers, key=lambda w: _affinity(w, server))
        return worker

    async def _live_workers(self, refresh: bool = False) -> list[str]:
        """Workers taking new calls: a fresh heartbeat, and not draining for a stop."""
        if refresh or time.monotonic() - self._workers_at > _WORKERS_REFRESH:
            since = time.time() - WORKER_TTL_SECONDS
            found, draining = await asyncio.gather(
                self._redis.call("ZRANGEBYSCORE", workers_key(self.prefix), since, "+inf"),
                self._redis.call("SMEMBERS", draining_key(self.prefix)),
            )
            workers = sorted({_text(w) for w in found} - {_text(w) for w in draining})
            if workers != self._workers:
                self._workers = workers
                self._routes = {}  # rendezvous choices change only with the worker list
            self._workers_at = time.monotonic()
        return self._workers

    def _leaving(self, worker: str) -> None:
        # It said it is stopping: route around it now, before the next refresh says so too.
        if worker in self._workers:
            self._workers = [w for w in self._workers if w != worker]
            self._routes = {}

    # -- a dead worker's calls ---------------------------------------------------------

    def _ensure_watch(self) -> None:
        if self._watch is None or self._watch.done():
            self._watch = self._spawn(self._watch_workers())

    async def _watch_workers(self) -> None:
        """While calls are pending, notice a worker whose heartbeat stopped (SIGKILL, lost host)."""
        rescuing: set[str] = set()
        while self._pending:
            await asyncio.sleep(_WATCH_INTERVAL)
            try:
                await self._live_workers(refresh=True)
                present = await self._redis.call(
                    "ZRANGEBYSCORE",
                    workers_key(self.prefix),
                    time.time() - WORKER_LOST_SECONDS,
                    "+inf",
                )
            except OSError:
                continue  # Redis itself is away: the calls' own timeouts apply
            present = {_text(w) for w in present}
            for request_id, pending in list(self._pending.items()):
                if (
                    pending.worker not in present
                    and request_id not in rescuing
                    and not pending.future.done()
                ):
                    rescuing.add(request_id)
                    self._spawn(self._rescue(request_id, pending)).add_done_callback(
                        lambda _, r=request_id: rescuing.discard(r)
                    )

    async def _rescue(self, request_id: str, pending: _Pending) -> None:
        """Take the call back if the dead worker never read it (then it runs elsewhere); else fail it."""
        taken = await self._redis.call(
            "LREM", inbox_key(self.prefix, pending.worker), 1, pending.payload
        )
        if taken:
            error = handback(f"pool worker {pending.worker} is gone")
        else:
            # A worker that stopped in order answers what it read (a result, or the call handed
            # back) before it leaves: give that answer a moment to arrive before calling it lost.
            await asyncio.wait({pending.future}, timeout=_RESCUE_GRACE)
            message = (
                f"server {pending.server!r}: pool worker {pending.worker} stopped (no heartbeat for "
                f"{WORKER_LOST_SECONDS:g}s) while running the call; it may or may not have run"
            )
            error = encode_error(WorkerLost(pending.server, message))
        pending.fail(request_id, error)

    # -- replies -----------------------------------------------------------------------

    async def _ensure_subscribed(self) -> None:
        if self._subscriber is None or self._subscriber.done():
            self._subscribed = asyncio.get_running_loop().create_future()
            self._subscriber = asyncio.get_running_loop().create_task(
                self._subscribe_forever(), name="mcp-remote-pool-subscriber"
            )
        assert self._subscribed is not None
        await asyncio.shield(self._subscribed)

    async def _subscribe_forever(self) -> None:
        """Hold the reply subscription; resubscribe when the connection drops."""
        assert self._subscribed is not None
        channels = [self.reply_channel] + (
            [events_channel(self.prefix)] if self.on_notification else []
        )
        while True:
            try:
                conn = self._sub_conn = await RespConnection.open(
                    self.redis_url, on_push=self._on_push
                )
                await conn.subscribe(*channels)
            except (OSError, TimeoutError) as exc:
                if not self._subscribed.done():
                    self._subscribed.set_exception(exc)  # the first caller hears why
                    self._subscribed.exception()
                    return
                logger.warning("remote pool could not resubscribe (%s); retrying", exc)
                await asyncio.sleep(_RESUBSCRIBE_WAIT)
                continue
            self._listening = True
            if not self._subscribed.done():
                self._subscribed.set_result(None)
            await conn.wait_closed()
            self._listening = False
            logger.warning("remote pool lost its reply subscription; resubscribing")
            self._fail_pending()
            await asyncio.sleep(_RESUBSCRIBE_WAIT)

    def _fail_pending(self) -> None:
        """Replies published while we were not subscribed are lost: tell the callers now, not at their timeout."""
        for request_id, pending in self._pending.items():
            message = f"server {pending.server!r}: {_REDIS_DOWN} during the call; it may or may not have run"
            pending.fail(request_id, encode_error(ServerUnavailable(pending.server, message)))

    def _on_push(self, channel: bytes, raw: bytes) -> None:
        self._on_message(json.loads(raw))

    def _on_link_message(self, worker: str, data: dict[str, Any]) -> None:
        kind = data.get("t")
        if kind == "bye":
            self._parted(worker)
        elif kind == "took":
            took, _ = self._handoffs.get(data["id"], (None, None))
            if took is not None and not took.done():
                took.set_result(bool(data.get("ok")))
        else:
            self._on_message(data)

    def _parted(self, worker: str) -> None:
        """The worker said its last word on our link (`link.BYE`): it is stopping, and every call
        we sent on the link that it has not answered was never run. Send them elsewhere now,
        rather than waiting for its heartbeat to lapse and calling them lost."""
        self._leaving(worker)
        link = self._links.pop(worker, None)
        if link is None:
            return
        link.close()  # the worker waits for our end to close before it closes its own
        for request_id, pending in self._pending.items():
            if pending.link is link:
                pending.fail(request_id, handback(f"pool worker {worker} stopped"))
        for took, on in self._handoffs.values():
            if on is link and not took.done():
                took.set_result(False)  # it starts nothing more: Celery carries the work

    def _on_message(self, data: dict[str, Any]) -> None:
        """A message from a worker, by link or by the reply channel."""
        if "s" in data and "n" in data:
            self._spawn(self._deliver_notification(data))
            return
        pending = self._pending.get(data.get("id", ""))
        if pending is None:
            return  # a late reply for a call that already gave up
        kind = data["t"]
        if kind == "res":
            if not pending.future.done():
                pending.future.set_result(data)
        elif kind == "log":  # a log line, or another note ("m") relayed in order
            log = pending.relay.handler(data.get("m", "log")) if pending.relay is not None else None
            if log is not None:
                pending.tail = self._spawn(_deliver_after(pending.tail, log, data["p"]))
        elif kind == "prog" and pending.progress is not None and data["k"] > pending.progress_seen:
            # An overtaken, older update is dropped: progress only grows.
            pending.progress_seen = data["k"]
            self._spawn(pending.progress(*data["p"]))
        elif kind == "sreq":
            self._spawn(self._answer_server_request(pending, data))

    async def _deliver_notification(self, data: dict[str, Any]) -> None:
        assert self.on_notification is not None
        try:
            await self.on_notification(data["s"], load_notification(data["n"]))
        except Exception:
            logger.exception("on_notification hook failed for server %r", data["s"])

    async def _answer_server_request(self, pending: _Pending, data: dict[str, Any]) -> None:
        handler = pending.relay.handler(data["m"]) if pending.relay else None
        params = load_server_request_params(data["m"], data.get("p"))
        try:
            if handler is None:
                raise PoolError("", f"no client is attached to answer {data['m']}")
            answer = await (handler(params) if params is not None else handler())
            body = (
                {"err": dump_model(answer)}
                if isinstance(answer, types.ErrorData)
                else {"ok": dump_any(answer)}
            )
        except (
            Exception
        ) as exc:  # boundary: the backend gets an error reply instead of waiting forever
            body = {"err": {"code": types.INTERNAL_ERROR, "message": encode_error(exc)["message"]}}
        await self._push(
            pending.worker, {"t": "sres", "id": data["id"], "rid": data["rid"], **body}
        )


class _ResendSpec(Exception):
    """The worker did not know the spec by reference: send it in full."""


class _Moved(Exception):
    """The call was not run by its worker (stopping, or dead before reading it): send it again."""


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


async def _deliver_after(
    previous: asyncio.Future[None] | None, log: Any, params: dict[str, Any]
) -> None:
    if previous is not None:
        await asyncio.wait({previous})
    try:
        await log(params)
    except Exception:
        logger.exception("relay log handler failed")


def _affinity(worker: str, server: str) -> int:
    # Rendezvous hashing: every web process picks the same worker for a server without coordination.
    return int.from_bytes(
        hashlib.blake2b(f"{worker}\0{server}".encode(), digest_size=8).digest(), "big"
    )
