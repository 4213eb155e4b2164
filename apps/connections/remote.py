"""`RemotePool`: the web side of the Redis path, with the same interface as `Pool`.

A call is one RPUSH to the chosen worker's inbox and one PUBLISH back on this process's
reply channel, read by a single reader task that resolves futures by request id (see
`wire.py` for the messages). Measured overhead ~1 ms p50 (`benchmarks/pool.py`);
Celery's own messaging costs 2-4 ms, which is why tool calls do not go through it.
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
from dataclasses import dataclass
from typing import Any

import mcp_types as types
import redis.asyncio as aioredis

from apps.connections.discovery import Discovery
from apps.connections.errors import CallTimeout, PoolError, ServerUnavailable
from apps.connections.hooks import NotificationHook, ProgressFn, Relay
from apps.connections.specs import ServerSpec
from apps.connections.wire import (
    NAME_OPS,
    OPS,
    SPEC_UNKNOWN,
    decode_error,
    dump_any,
    dump_model,
    dumps,
    encode_error,
    load_notification,
    load_server_request_params,
    spec_ref,
)
from apps.connections.worker import (
    DEFAULT_PREFIX,
    WORKER_TTL_SECONDS,
    connect_redis,
    events_channel,
    inbox_key,
    workers_key,
)

logger = logging.getLogger(__name__)

_WORKERS_REFRESH = 1.0  # seconds a worker list is trusted before asking Redis again
_READ_WAIT = 5.0  # reader wakes this often when idle (keeps the socket timeout from firing)


@dataclass
class _Pending:
    future: asyncio.Future[dict[str, Any]]
    worker: str
    progress: ProgressFn | None
    relay: Relay | None
    progress_seen: int = -1


class RemotePool:
    """Sends pool operations to the worker that holds each server's connection."""

    def __init__(
        self,
        redis_url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        on_notification: NotificationHook | None = None,
        default_timeout: float = 60.0,
        dispatch_margin: float = 5.0,
    ) -> None:
        self.redis_url = redis_url
        self.prefix = prefix
        self.on_notification = on_notification
        self.default_timeout = default_timeout
        self.dispatch_margin = dispatch_margin  # extra wait for the worker's own timeout error to arrive
        self.client_id = uuid.uuid4().hex[:12]
        self.reply_channel = f"{prefix}:reply:{self.client_id}"
        self._ids = itertools.count()
        self._pending: dict[str, _Pending] = {}
        self._specs_sent: set[tuple[str, str, str]] = set()
        self._workers: list[str] = []
        self._workers_at = 0.0
        self._redis: aioredis.Redis | None = None
        self._reader: asyncio.Task[None] | None = None
        self._started: asyncio.Lock | None = None
        self._background: set[asyncio.Task[Any]] = set()

    async def __aenter__(self) -> RemotePool:
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
    ) -> types.CallToolResult:
        args = {"name": name, "arguments": dict(arguments) if arguments is not None else None}
        if meta is not None:
            args["meta"] = dict(meta)
        return await self._call(spec, "call_tool", args, timeout, progress_callback, relay)

    async def list_tools(self, spec: ServerSpec, *, timeout: float | None = None) -> list[types.Tool]:
        return await self._call(spec, "list_tools", {}, timeout)

    async def list_resources(self, spec: ServerSpec, *, timeout: float | None = None) -> list[types.Resource]:
        return await self._call(spec, "list_resources", {}, timeout)

    async def list_resource_templates(
        self, spec: ServerSpec, *, timeout: float | None = None
    ) -> list[types.ResourceTemplate]:
        return await self._call(spec, "list_resource_templates", {}, timeout)

    async def list_prompts(self, spec: ServerSpec, *, timeout: float | None = None) -> list[types.Prompt]:
        return await self._call(spec, "list_prompts", {}, timeout)

    async def read_resource(
        self, spec: ServerSpec, uri: str, *, timeout: float | None = None, relay: Relay | None = None
    ) -> types.ReadResourceResult:
        return await self._call(spec, "read_resource", {"uri": uri}, timeout, relay=relay)

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
        args = {"ref": dump_model(ref), "argument": dict(argument), "context_arguments": context_arguments}
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
        replies = await asyncio.gather(*(self._send(w, "stats", {}, 10.0) for w in workers), return_exceptions=True)
        return {w: (r if not isinstance(r, BaseException) else {"error": str(r)}) for w, r in zip(workers, replies)}

    async def aclose(self) -> None:
        for task in [self._reader, *self._background]:
            if task is not None:
                task.cancel()
        await asyncio.gather(*(t for t in [self._reader, *self._background] if t), return_exceptions=True)
        self._reader = None
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None

    # -- dispatch ----------------------------------------------------------------------

    async def _call(
        self,
        spec: ServerSpec,
        op: str,
        args: dict[str, Any],
        timeout: float | None,
        progress: ProgressFn | None = None,
        relay: Relay | None = None,
    ) -> Any:
        worker = await self._route(spec.name)
        limit = timeout or spec.timeout or self.default_timeout
        body = {"op": op, "a": args, "to": limit, "s": spec_ref(spec)}
        if progress is not None:
            body["prog"] = True
        if relay is not None:
            body["rel"] = [m for m in _RELAYABLE if relay.handler(m) is not None]
        if (worker, spec.name, spec.config_hash) not in self._specs_sent:
            body["S"] = spec.to_wire()
        try:
            result = await self._send(worker, op, body, limit, progress, relay, server=spec.name)
        except _ResendSpec:
            body["S"] = spec.to_wire()
            result = await self._send(worker, op, body, limit, progress, relay, server=spec.name)
        self._specs_sent.add((worker, spec.name, spec.config_hash))
        return result

    async def _name_call(self, name: str, op: str) -> Any:
        worker = await self._route(name)
        return await self._send(worker, op, {"op": op, "a": {"name": name}}, 30.0, server=name)

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
    ) -> Any:
        await self._ensure_started()
        assert self._redis is not None
        request_id = f"{self.client_id}:{next(self._ids)}"
        body = {"op": op, **body, "t": "call", "id": request_id, "r": self.reply_channel}
        future = asyncio.get_running_loop().create_future()
        self._pending[request_id] = _Pending(future, worker, progress, relay)
        try:
            await self._redis.rpush(inbox_key(self.prefix, worker), dumps(body))
            reply = await self._await_reply(future, worker, request_id, limit, server)
        finally:
            self._pending.pop(request_id, None)
        return _result(reply, op)

    async def _await_reply(
        self, future: asyncio.Future[dict[str, Any]], worker: str, request_id: str, limit: float, server: str
    ) -> dict[str, Any]:
        try:
            async with asyncio.timeout(limit + self.dispatch_margin):
                return await asyncio.shield(future)
        except TimeoutError:
            self._send_cancel(worker, request_id)
            raise CallTimeout(server, f"server {server!r}: no reply from pool worker {worker} within {limit:g}s")
        except asyncio.CancelledError:
            self._send_cancel(worker, request_id)  # lets the worker send notifications/cancelled to the backend
            raise

    def _send_cancel(self, worker: str, request_id: str) -> None:
        self._spawn(self._push(worker, {"t": "cancel", "id": request_id}))

    async def _push(self, worker: str, message: dict[str, Any]) -> None:
        if self._redis is not None:
            await self._redis.rpush(inbox_key(self.prefix, worker), dumps(message))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- routing -----------------------------------------------------------------------

    async def _route(self, server: str) -> str:
        workers = await self._live_workers()
        if not workers:
            workers = await self._live_workers(refresh=True)
        if not workers:
            raise ServerUnavailable(server, f"server {server!r} is unavailable: no pool workers are running")
        return max(workers, key=lambda w: _affinity(w, server))

    async def _live_workers(self, refresh: bool = False) -> list[str]:
        if refresh or time.monotonic() - self._workers_at > _WORKERS_REFRESH:
            await self._ensure_started()
            assert self._redis is not None
            since = time.time() - WORKER_TTL_SECONDS
            found = await self._redis.zrangebyscore(workers_key(self.prefix), since, "+inf")
            self._workers = sorted(w.decode() if isinstance(w, bytes) else w for w in found)
            self._workers_at = time.monotonic()
        return self._workers

    # -- replies -----------------------------------------------------------------------

    async def _ensure_started(self) -> None:
        if self._reader is not None:
            return
        if self._started is None:
            self._started = asyncio.Lock()
        async with self._started:
            if self._reader is None:
                await self._start_reader()

    async def _start_reader(self) -> None:
        # Commands: bounded socket timeout. The subscriber waits with its own read timeout.
        self._redis = connect_redis(self.redis_url, socket_timeout=10.0)
        pubsub = self._redis.pubsub()
        channels = [self.reply_channel] + ([events_channel(self.prefix)] if self.on_notification else [])
        await pubsub.subscribe(*channels)
        self._reader = asyncio.get_running_loop().create_task(self._read(pubsub), name="mcp-remote-pool-reader")

    async def _read(self, pubsub: Any) -> None:
        try:
            while True:
                try:
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=_READ_WAIT)
                except (ConnectionError, TimeoutError, aioredis.RedisError):
                    logger.warning("remote pool lost its reply subscription; resubscribing", exc_info=True)
                    await asyncio.sleep(0.2)
                    continue
                if message is not None:
                    self._on_message(message)
        finally:
            await pubsub.aclose()

    def _on_message(self, message: dict[str, Any]) -> None:
        data = json.loads(message["data"])
        if "s" in data and "n" in data:
            self._spawn(self._deliver_notification(data))
            return
        pending = self._pending.get(data.get("id", ""))
        if pending is None:
            return  # a late reply for a call that already gave up
        if data["t"] == "res" and not pending.future.done():
            pending.future.set_result(data)
        elif data["t"] == "prog" and pending.progress is not None and data["k"] > pending.progress_seen:
            pending.progress_seen = data["k"]  # an overtaken, older update is dropped: progress only grows
            self._spawn(pending.progress(*data["p"]))
        elif data["t"] == "sreq":
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
            body = {"err": dump_model(answer)} if isinstance(answer, types.ErrorData) else {"ok": dump_any(answer)}
        except Exception as exc:  # boundary: the backend gets an error reply instead of waiting forever
            body = {"err": {"code": types.INTERNAL_ERROR, "message": encode_error(exc)["message"]}}
        await self._push(pending.worker, {"t": "sres", "id": data["id"], "rid": data["rid"], **body})


class _ResendSpec(Exception):
    """The worker did not know the spec by reference: send it in full."""


_RELAYABLE = ("sampling/createMessage", "elicitation/create", "roots/list")


def _affinity(worker: str, server: str) -> int:
    # Rendezvous hashing: every web process picks the same worker for a server without coordination.
    return int.from_bytes(hashlib.blake2b(f"{worker}\0{server}".encode(), digest_size=8).digest(), "big")


def _result(reply: dict[str, Any], op: str) -> Any:
    if "err" in reply:
        if reply["err"]["kind"] == SPEC_UNKNOWN:
            raise _ResendSpec()
        raise decode_error(reply["err"])
    codec = OPS.get(op) or NAME_OPS[op]
    return codec.load(reply["ok"])
