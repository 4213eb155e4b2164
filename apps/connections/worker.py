"""The pool worker: an asyncio loop that serves a `Pool` to web processes.

Each worker registers itself in a sorted set (score = last heartbeat), takes web processes'
direct links (`link.py`; address and token in Redis) and reads its own inbox list. Web processes pick the worker for a server by rendezvous hashing over the
live workers, so each backend is held by exactly one worker (one child per server, not
one per worker), and a worker joining or leaving moves only its share of servers.

Run it standalone with `python -m apps.connections.worker --redis-url URL`, or inside a
Celery worker process via `apps.connections.celery_hooks`.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import os
import secrets
import socket
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
import redis.asyncio as aioredis
from mcp.shared.exceptions import MCPError

from apps.connections.codec import SpecCodec, default_codec
from apps.connections.errors import PoolError, ServerUnavailable
from apps.connections.hooks import ELICITATION_COMPLETE, ProgressFn, Relay
from apps.connections.link import Link, LinkServer, links_key
from apps.connections.pool import Pool, PoolOptions
from apps.connections.resp import RespClient, RespConnection
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
    handback,
)

logger = logging.getLogger(__name__)

DEFAULT_PREFIX = "mcphub:pool"
HEARTBEAT_SECONDS = 0.25
# A worker silent this long gets no new calls (six missed beats: it may only be busy).
WORKER_TTL_SECONDS = 1.5
# Silent this long, it is gone (SIGKILL, a lost host): web processes fail the calls it took and move
# the ones still queued for it to a live worker. Longer than the routing bound, so a loaded machine
# that delays a few beats never fails calls a live worker is running (in-flight errors stay < 5 s).
WORKER_LOST_SECONDS = 2.5
DRAIN_SECONDS = 15.0  # on stop, how long calls in flight may take to finish
_REAP_AFTER = (
    5.0  # a registry entry this stale is removed, with its inbox (callers took their calls back)
)
_BLPOP_SECONDS = 1  # wake up this often to notice shutdown (Redis >= 7 for BLMPOP)
_BLPOP_GRACE = 10.0  # a BLMPOP unanswered this long past its timeout means a dead connection
_DRAIN_POLL = 0.1  # while stopping, how often the inbox is emptied (calls go back to their callers)
_BATCH = 128  # messages taken per wake-up
_SPEC_CACHE = 4096
_NO_CODEC: Any = object()


def workers_key(prefix: str) -> str:
    return f"{prefix}:workers"


def draining_key(prefix: str) -> str:
    """Workers finishing their calls before a stop: alive, but not to be given new ones."""
    return f"{prefix}:draining"


def inbox_key(prefix: str, worker_id: str) -> str:
    return f"{prefix}:inbox:{worker_id}"


def events_channel(prefix: str) -> str:
    return f"{prefix}:events"


def connect_redis(
    url: str, *, socket_timeout: float | None, max_connections: int = 64
) -> aioredis.Redis:
    """A redis-py client for the cold path (tests, tools); the hot path uses `resp.RespClient`."""
    # redis-py 8 defaults socket_timeout to 5 s; every client here sets its own on purpose.
    # A blocking pool: 100 concurrent callers queue for a socket instead of failing.
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=10,
        socket_timeout=socket_timeout,
        socket_connect_timeout=5.0,
        health_check_interval=15,
    )
    return aioredis.Redis.from_pool(pool)  # owns the pool: aclose() closes its sockets too


class PoolWorker:
    """Serves pool operations from callers' direct links and this worker's Redis inbox until `stop()`.

    What it sends back goes the way the call came. Two Redis connections: one blocked in BLMPOP on the inbox, one for everything sent
    back (replies, progress, log lines and server requests are PUBLISHed without waiting
    for Redis's answer; one connection keeps them in order).
    """

    def __init__(
        self,
        redis_url: str,
        *,
        options: PoolOptions | None = None,
        prefix: str = DEFAULT_PREFIX,
        worker_id: str | None = None,
        codec: SpecCodec | None = _NO_CODEC,
        listen: str = "127.0.0.1:0",
        advertise: str = "",
    ) -> None:
        """`listen`: where callers' direct links are taken ("host:port", port 0 for any; "" for
        none: calls then come through the Redis inbox only); `advertise`: the host callers
        reach it at, if not the listen host (default: the address on the route to Redis)."""
        self.redis_url = redis_url
        self.prefix = prefix
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.inbox = inbox_key(prefix, self.worker_id)
        self.codec = default_codec() if codec is _NO_CODEC else codec
        self.pool = Pool(options, on_notification=self._publish_notification)
        self._specs: OrderedDict[tuple[str, str], ServerSpec] = OrderedDict()
        self._calls: dict[str, asyncio.Task[None]] = {}
        self._server_requests: dict[tuple[str, int], asyncio.Future[dict[str, Any]]] = {}
        self._request_ids = 0
        self._stopping = asyncio.Event()
        self._cancelled: set[str] = set()  # calls their caller cancelled (no reply is wanted)
        self._replies: set[asyncio.Task[None]] = set()
        self._out = RespClient(redis_url)
        self._inbox_conn: RespConnection | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._local_ids = itertools.count()
        self.listen = listen
        self.advertise = advertise
        self._links: LinkServer | None = None

    async def run(self) -> None:
        self._loop = asyncio.get_running_loop()
        heartbeat = asyncio.create_task(self._heartbeat(), name="mcp-pool-heartbeat")
        try:
            _here[self.worker_id] = self  # before routing can name it (it is in Redis next)
            await self._take_links()
            await self._register()
            await self._read_inbox()
        finally:
            _here.pop(self.worker_id, None)
            heartbeat.cancel()
            await self._shutdown()

    def stop(self) -> None:
        """Stop taking calls: queued ones go back to the callers (who resend them to a live
        worker), calls in flight finish (up to DRAIN_SECONDS), then the backends are closed."""
        _here.pop(self.worker_id, None)  # same-process callers go through Redis from now on
        self._stopping.set()
        # Wake the BLMPOP with a message of our own, not by closing its connection: a call Redis
        # had just popped for us would be lost with it.
        self._spawn_reply(self._wake())

    async def _wake(self) -> None:
        try:
            await self._out.call("RPUSH", self.inbox, dumps({"t": "wake"}))
        except OSError:
            pass  # Redis is away: the BLMPOP ends at its timeout instead

    async def _take_links(self) -> None:
        """Listen for callers' direct links and publish where (before the worker is routable)."""
        if not self.listen:
            return
        server = LinkServer(self.listen, secrets.token_urlsafe(24), self._on_link_message)
        if self._out.address.tls and server.host not in ("127.0.0.1", "::1", "localhost"):
            # Links are plain TCP: where calls reach Redis over TLS, they must not leave in the clear.
            logger.warning(
                "pool worker takes no direct links on %s: Redis is reached over TLS, links are not",
                self.listen,
            )
            return
        try:
            await server.start()
        except OSError as exc:
            logger.warning(
                "pool worker cannot listen on %s (%s): calls come through Redis only",
                self.listen,
                exc,
            )
            return
        self._links = server
        redis = self._out.address
        address = server.address(self.advertise, (redis.host or "127.0.0.1", redis.port or 6379))
        await self._out.call("HSET", links_key(self.prefix), self.worker_id, address)
        logger.info("pool worker %s takes direct links at %s", self.worker_id, address.split()[0])

    def _on_link_message(self, msg: dict[str, Any], link: Link) -> None:
        kind = msg.get("t")
        if kind == "call":
            msg["_link"] = link  # what it sends back goes the way the call came
        elif kind == "work":
            link.send(dumps({"t": "took", "id": msg["id"], "ok": self._take_work(msg)}))
            return
        self._dispatch(msg)

    def _take_work(self, msg: dict[str, Any]) -> bool:
        """Start the work handed over (`take_work`); False if this process runs no such work now."""
        handler = _work.get(msg.get("k", ""))
        if handler is None or self._stopping.is_set():
            return False
        try:
            return handler(msg["w"])
        except Exception:  # boundary: the caller sends it the slow way instead
            logger.exception("pool worker could not take %s %s", msg.get("k"), msg.get("w"))
            return False

    async def _register(self) -> None:
        await self._out.call("ZADD", workers_key(self.prefix), time.time(), self.worker_id)
        logger.info("pool worker %s listening on %s", self.worker_id, self.inbox)

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            try:
                now = time.time()
                await self._out.call("ZADD", workers_key(self.prefix), now, self.worker_id)
                await self._reap(now - _REAP_AFTER)
            except OSError:
                pass  # Redis is away (the inbox reader says so once); the next beat retries
            except Exception:  # boundary: a Redis hiccup must not end the heartbeat
                logger.warning("pool worker heartbeat failed", exc_info=True)

    async def _reap(self, before: float) -> None:
        """Forget workers long dead, and what is still queued for them (callers gave up long ago)."""
        for dead in await self._out.call("ZRANGEBYSCORE", workers_key(self.prefix), 0, before):
            name = dead.decode() if isinstance(dead, bytes) else dead
            await self._out.call("ZREM", workers_key(self.prefix), name)
            await self._out.call("SREM", draining_key(self.prefix), name)
            await self._out.call("HDEL", links_key(self.prefix), name)
            await self._out.call("DEL", inbox_key(self.prefix, name))

    async def _read_inbox(self) -> None:
        drain_until: float | None = None
        lost_at: float | None = None  # when Redis went away; one line per outage, one when back
        while True:
            if self._stopping.is_set():
                if drain_until is None:
                    drain_until = time.monotonic() + DRAIN_SECONDS
                    await self._drain()
                if not self._calls or time.monotonic() > drain_until:
                    break
            try:
                if self._inbox_conn is None or self._inbox_conn.closed:
                    self._inbox_conn = await RespConnection.open(self.redis_url)
                # BLMPOP takes everything queued (up to a batch) in the same round trip as the wait.
                wait = _DRAIN_POLL if self._stopping.is_set() else _BLPOP_SECONDS
                async with asyncio.timeout(wait + _BLPOP_GRACE):
                    item = await self._inbox_conn.call(
                        "BLMPOP", wait, 1, self.inbox, "LEFT", "COUNT", _BATCH
                    )
            except (OSError, TimeoutError) as exc:
                if not self._stopping.is_set() and lost_at is None:
                    lost_at = time.monotonic()
                    logger.warning("pool worker lost Redis (%s); retrying", exc)
                if self._inbox_conn is not None:
                    self._inbox_conn.close()
                await asyncio.sleep(0.5 if not self._stopping.is_set() else 0.05)
                continue
            if lost_at is not None:
                logger.warning(
                    "pool worker reconnected to Redis after %.1f s", time.monotonic() - lost_at
                )
                lost_at = None
            for raw in item[1] if item else ():
                self._dispatch(json.loads(raw))

    async def _drain(self) -> None:
        # First of all: web processes stop routing new calls here (and resend what we hand back);
        # the heartbeat goes on, so they know the calls in flight are still being run.
        try:
            await self._out.call("SADD", draining_key(self.prefix), self.worker_id)
        except OSError:
            logger.warning("pool worker could not announce its stop", exc_info=True)

    async def _unregister(self) -> None:
        try:
            await self._out.call("ZREM", workers_key(self.prefix), self.worker_id)
            await self._out.call("SREM", draining_key(self.prefix), self.worker_id)
            await self._out.call("HDEL", links_key(self.prefix), self.worker_id)
        except OSError:
            logger.warning("pool worker could not unregister", exc_info=True)

    async def _shutdown(self) -> None:
        if self._inbox_conn is not None:
            self._inbox_conn.close()
        await self._unregister()
        for task in list(self._calls.values()):
            task.cancel()  # only those still running after the drain: their callers get an error
        await asyncio.gather(*self._calls.values(), return_exceptions=True)
        try:
            await self._hand_back_queued()
        except OSError:
            logger.warning("pool worker could not answer its queued calls", exc_info=True)
        await asyncio.gather(*self._replies, return_exceptions=True)
        if self._links is not None:
            await self._links.close()  # after the last reply: what is queued on a link is sent
            await asyncio.gather(*self._replies, return_exceptions=True)  # calls it handed back
        await self.pool.aclose()
        await self._out.aclose()

    async def _hand_back_queued(self) -> None:
        """Return calls still queued for us unrun, so their callers resend them to a live worker."""
        while raw_items := await self._out.call("LPOP", self.inbox, _BATCH):
            for raw in raw_items:
                msg = json.loads(raw)
                if msg.get("t") == "call":
                    await self._hand_back(msg)
        # What a web process pushes after this is taken back by the web process itself (its
        # watchdog sees us gone); the expiry only bounds what a vanished web process left here.
        await self._out.call("PEXPIRE", self.inbox, int(_REAP_AFTER * 1000))

    async def _hand_back(self, msg: dict[str, Any]) -> None:
        await self._reply(msg, {"err": handback(f"pool worker {self.worker_id} is stopping")})

    # -- calls from this process ---------------------------------------------------------

    async def call_here(
        self,
        op_name: str,
        spec: ServerSpec,
        args: dict[str, Any],
        timeout: float,
        progress: ProgressFn | None,
        relay: Relay | None,
    ) -> Any:
        """Run a spec operation on this worker's pool for a caller in this process, without
        Redis: on the worker's own loop (its connections belong to it), with the caller's
        progress and relay run back on the caller's loop. The result is what the operation
        returns (a `call_tool` result as the backend's JSON), errors as they travel on the wire.
        """
        assert self._loop is not None
        caller = asyncio.get_running_loop()
        if caller is self._loop:
            # A task of its own: a stop that cancels the call must not cancel its caller.
            return await caller.create_task(
                self._run_here(op_name, spec, args, timeout, progress, relay)
            )
        progress = _on_loop(progress, caller) if progress is not None else None
        relay = _relay_on_loop(relay, caller) if relay is not None else None
        work = self._run_here(op_name, spec, args, timeout, progress, relay)
        try:
            future = asyncio.run_coroutine_threadsafe(work, self._loop)
        except RuntimeError:  # the worker's loop closed between routing and now
            work.close()
            raise ServerUnavailable(
                spec.name, f"pool worker {self.worker_id} stopped before the call started"
            ) from None
        # Cancelling the caller cancels the call on the worker's loop (notifications/cancelled).
        return await asyncio.wrap_future(future)

    async def _run_here(
        self,
        op_name: str,
        spec: ServerSpec,
        args: dict[str, Any],
        timeout: float,
        progress: ProgressFn | None,
        relay: Relay | None,
    ) -> Any:
        call_id = f"here:{next(self._local_ids)}"
        task = asyncio.current_task()
        assert task is not None
        self._calls[call_id] = task  # a stop drains it like a call from Redis
        try:
            return await OPS[op_name].invoke(
                self.pool, spec, args, timeout=timeout, progress=progress, relay=relay
            )
        except asyncio.CancelledError:
            if not self._stopping.is_set():
                raise
            raise ServerUnavailable(
                "", f"pool worker {self.worker_id} stopped before the call finished"
            ) from None
        except (MCPError, PoolError):
            raise
        except Exception as exc:  # as on the wire: any other failure is a PoolError naming it
            raise decode_error(encode_error(exc)) from exc
        finally:
            self._calls.pop(call_id, None)

    # -- messages ----------------------------------------------------------------------

    def _dispatch(self, msg: dict[str, Any]) -> None:
        kind = msg.get("t")
        if kind == "call" and self._stopping.is_set():
            self._spawn_reply(self._hand_back(msg))
        elif kind == "call":
            call_id = msg["id"]
            task = asyncio.create_task(self._serve(msg))
            self._calls[call_id] = task
            task.add_done_callback(lambda _: self._call_done(call_id))
        elif kind == "cancel" and (task := self._calls.get(msg["id"])) is not None:
            self._cancelled.add(msg["id"])
            task.cancel()  # the pool's request scope sends notifications/cancelled to the backend
        elif kind == "sres":
            future = self._server_requests.get((msg["id"], msg["rid"]))
            if future is not None and not future.done():
                future.set_result(msg)

    def _call_done(self, call_id: str) -> None:
        self._calls.pop(call_id, None)
        self._cancelled.discard(call_id)

    def _spawn_reply(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._replies.add(task)
        task.add_done_callback(self._replies.discard)

    async def _serve(self, msg: dict[str, Any]) -> None:
        try:
            reply = {"ok": await self._execute(msg)}
        except asyncio.CancelledError:
            if msg["id"] in self._cancelled or not self._stopping.is_set():
                return  # the caller cancelled and no longer listens
            error = ServerUnavailable(
                "", f"pool worker {self.worker_id} stopped before the call finished"
            )
            reply = {"err": encode_error(error)}
        except (
            Exception
        ) as exc:  # boundary: every failure becomes an error reply, never a silent drop
            reply = {"err": encode_error(exc)}
        try:
            await self._reply(msg, reply)
        except OSError as exc:
            logger.warning("pool worker could not send a reply for %s: %s", msg.get("id"), exc)

    async def _execute(self, msg: dict[str, Any]) -> Any:
        op_name = msg["op"]
        if op_name in NAME_OPS:
            op = NAME_OPS[op_name]
            return op.dump(await op.invoke(self.pool, (msg.get("a") or {}).get("name", "")))
        spec = self._spec(msg)
        op = OPS[op_name]
        progress = self._progress_sender(msg) if msg.get("prog") else None
        relay = self._relay(msg) if "rel" in msg else None
        result = await op.invoke(
            self.pool,
            spec,
            msg.get("a") or {},
            timeout=msg.get("to"),
            progress=progress,
            relay=relay,
        )
        return op.dump(result)

    def _spec(self, msg: dict[str, Any]) -> ServerSpec:
        if "SE" in msg:
            if self.codec is None:
                raise PoolError(
                    msg["s"][0],
                    "pool worker cannot decrypt the server spec: give it the web processes' "
                    "MCPHUB_ENCRYPTION_KEYS (Django settings) or a codec",
                )
            spec = ServerSpec.from_wire(json.loads(self.codec.decrypt(msg["SE"])))
            self._remember(spec)
            return spec
        if "S" in msg:
            spec = ServerSpec.from_wire(msg["S"])
            self._remember(spec)
            return spec
        name, config_hash = msg["s"]
        spec_found = self._specs.get((name, config_hash))
        if spec_found is None:
            raise _SpecUnknown(name)
        self._specs.move_to_end((name, config_hash))
        return spec_found

    def _remember(self, spec: ServerSpec) -> None:
        self._specs[(spec.name, spec.config_hash)] = spec
        while len(self._specs) > _SPEC_CACHE:
            self._specs.popitem(last=False)

    async def _reply(self, msg: dict[str, Any], body: dict[str, Any]) -> None:
        await self._emit(msg, {"t": "res", "id": msg["id"], **body})

    async def _emit(self, msg: dict[str, Any], body: dict[str, Any]) -> None:
        """To the caller of `msg`: on the link the call came by, or (none, or it broke since) on
        the caller's Redis reply channel. One way per call keeps its messages in order."""
        link = msg.get("_link")
        if link is not None and not link.closed:
            link.send(dumps(body))
        else:
            await self._out.fire("PUBLISH", msg["r"], dumps(body))

    def _progress_sender(self, msg: dict[str, Any]) -> Any:
        order = itertools.count()

        async def send(progress: float, total: float | None, message: str | None) -> None:
            # Numbered: the SDK runs each progress callback in its own task, so they may overtake.
            body = {"t": "prog", "id": msg["id"], "k": next(order), "p": [progress, total, message]}
            await self._emit(msg, body)

        return send

    def _relay(self, msg: dict[str, Any]) -> Relay:
        methods = set(msg["rel"])

        def forward(method: str) -> Any:
            async def ask(*params: Any) -> Any:
                return await self._ask_caller(msg, method, params[0] if params else None)

            return ask if method in methods else None

        def note(method: str) -> Any:
            async def send(params: dict[str, Any]) -> None:
                # Same connection as the reply, sent before it: the caller sees it first.
                body = {"t": "log", "id": msg["id"], "p": params}
                if method != "log":
                    body["m"] = method
                await self._emit(msg, body)

            return send if method in methods else None

        return Relay(
            sampling=forward("sampling/createMessage"),
            elicitation=forward("elicitation/create"),
            list_roots=forward("roots/list"),
            log=note("log"),
            elicitation_complete=note(ELICITATION_COMPLETE),
            caller=msg.get("who"),
        )

    async def _ask_caller(self, msg: dict[str, Any], method: str, params: Any) -> Any:
        """Forward a server→client request to the web process that made the call; await its answer."""
        self._request_ids += 1
        key = (msg["id"], self._request_ids)
        future = self._server_requests[key] = asyncio.get_running_loop().create_future()
        try:
            out = {"t": "sreq", "id": msg["id"], "rid": key[1], "m": method, "p": dump_any(params)}
            await self._emit(msg, out)
            answer = await future
        finally:
            self._server_requests.pop(key, None)
        return _server_request_result(method, answer)

    async def _publish_notification(self, server: str, notification: Any) -> None:
        await self._out.fire(
            "PUBLISH",
            events_channel(self.prefix),
            dumps({"s": server, "n": dump_model(notification)}),
        )


# The pool workers running in this process, by id: `RemotePool` calls them directly.
_here: dict[str, PoolWorker] = {}
# Work this process starts when a web process hands it over on a link, by kind (`take_work`).
_work: dict[str, Callable[[str], bool]] = {}


def take_work(kind: str, handler: Callable[[str], bool] | None) -> None:
    """Have this process's pool workers start work of `kind` handed over by `RemotePool.hand_off`:
    `handler(work_id)` starts it without waiting for it (it runs on the pool worker's loop) and
    says whether it did. None: take no more of it (the callers send it by Celery again)."""
    if handler is None:
        _work.pop(kind, None)
    else:
        _work[kind] = handler


def worker_here(worker_id: str) -> PoolWorker | None:
    """The pool worker with this id if it runs in this process and takes calls, else None."""
    worker = _here.get(worker_id)
    return worker if worker is not None and not worker._stopping.is_set() else None


def _on_loop(fn: Callable[..., Awaitable[Any]], loop: asyncio.AbstractEventLoop) -> Any:
    """`fn`, called from another loop, run on `loop` (the caller's) and awaited there."""

    async def call(*args: Any) -> Any:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(fn(*args), loop))

    return call


def _relay_on_loop(relay: Relay, loop: asyncio.AbstractEventLoop) -> Relay:
    def moved(fn: Any) -> Any:
        return _on_loop(fn, loop) if fn is not None else None

    return Relay(
        sampling=moved(relay.sampling),
        elicitation=moved(relay.elicitation),
        list_roots=moved(relay.list_roots),
        log=moved(relay.log),
        elicitation_complete=moved(relay.elicitation_complete),
        caller=relay.caller,
    )


class _SpecUnknown(PoolError):
    """This worker has not seen the spec for a (name, hash): the caller resends it in full once."""

    kind = SPEC_UNKNOWN

    def __init__(self, server: str) -> None:
        super().__init__(server, f"worker does not know the current spec of server {server!r}")


def _server_request_result(method: str, answer: dict[str, Any]) -> Any:
    if "err" in answer:
        return types.ErrorData.model_validate(answer["err"])
    models = {
        "sampling/createMessage": types.CreateMessageResultWithTools,  # a superset: tool use too
        "elicitation/create": types.ElicitResult,
        "roots/list": types.ListRootsResult,
    }
    return models[method].model_validate(answer["ok"])


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the MCP connection pool over Redis.")
    parser.add_argument(
        "--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    )
    parser.add_argument("--prefix", default=DEFAULT_PREFIX)
    parser.add_argument("--options", default="{}", help="JSON object of PoolOptions fields")
    parser.add_argument(
        "--listen", default="127.0.0.1:0", help='direct links from callers ("" = Redis only)'
    )
    parser.add_argument("--advertise", default="", help="the host callers reach this worker at")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    options = PoolOptions.from_mapping(json.loads(args.options))
    asyncio.run(
        _serve_until_signalled(
            PoolWorker(
                args.redis_url,
                options=options,
                prefix=args.prefix,
                listen=args.listen,
                advertise=args.advertise,
            )
        )
    )


async def _serve_until_signalled(worker: PoolWorker) -> None:
    import signal

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, worker.stop)
    await worker.run()


if __name__ == "__main__":
    main()
