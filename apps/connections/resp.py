"""A small asyncio Redis client for the pool's hot path (RESP2 over one socket, pipelined).

Why not redis-py here: measured A/B, interleaved in one run (`benchmarks/redis_client.py`:
the same RPUSH → worker BLMPOP → PUBLISH → pub/sub reply round trip with ZADD heartbeats,
each side on the client under test, its own redis-server; 2-core machine shared with other
work), redis-py 8.1 *with* the hiredis parser against this client:

    load avg  client    conc   p50 µs   calls/s   CPU µs/call (caller + worker + redis)
    1.7       resp         1      186      4597   230   (this client's former Python parser)
              redis-py     1      336      2630   444
              resp        32      946     31590    40
              redis-py    32     2342     10260   182
    2.3       resp         1      175      4838   214   (hiredis parser, before the reply watchdog)
              redis-py     1      333      2546   466
              resp        32      689     42721    25
              redis-py    32     5248      5223   190
    8.4       resp         1      118      4403   138   (as it is now; latency noisy at this load)
              redis-py     1      365      1084   482
              resp        32     2480      8802    44
              redis-py    32    11305      2517   187

redis-py is +150-250 µs p50 at concurrency 1, an eighth to a third of the throughput at 32,
and 2-3.5× the CPU per call at 1, 4-7.6× at 32: far outside "the difference is small" (≤ ~50 µs, ≤ 10 %),
so this client stays. redis-py's cost is its per-command machinery (connection-pool checkout
— one connection per concurrent RPUSH —, command packing, response callbacks, pub/sub message
dicts), not parsing; pipelining concurrent callers on redis-py would mean rebuilding this
module's batching on top of it. This client does only what the path needs:

- commands are pipelined on one connection: every command issued in the same event-loop
  tick goes out in one write, replies resolve futures in order; parsing and packing are
  hiredis's C code (`hiredis.Reader`, `hiredis.pack_command`; redis-py uses the same parser);
- `fire()` sends a command whose reply is discarded (PUBLISH of replies and progress:
  one connection keeps them in order, and the worker never waits for Redis);
- a subscriber connection hands each pub/sub message to a callback as it is parsed.

What production Redis needs, from the same URL every other Redis user of the hub reads
(redis-py, Celery/kombu, channels-redis):

- `redis://[[user]:password@]host:port/db`, `unix:///path?db=N`: AUTH (ACL user or the
  default user's password) and SELECT on every (re)connect;
- `rediss://` TLS with redis-py's query options: `ssl_cert_reqs` (required — the default —,
  optional, none), `ssl_ca_certs`, `ssl_ca_path`, `ssl_certfile` + `ssl_keyfile` (client
  certificate), `ssl_check_hostname`;
- restarts and fail-overs: every way Redis can be unreachable is a `ConnectionError` (what
  `hotstate.OUTAGE_ERRORS` turns into 503 + Retry-After): refused, reset, a failed TLS
  handshake, no answer to the connect within `timeout`. A lost connection fails every
  command waiting on it at once; the next command reconnects. A connection that stops
  answering (a half-open socket after a fail-over) is given up after `reply_timeout`, and
  TCP keepalive notices idle dead subscriber sockets. Error replies that mean "this Redis
  cannot serve now" (LOADING after a restart, READONLY after a fail-over, NOAUTH,
  WRONGPASS, NOPERM, ...) raise `RespUnavailable`, a `ConnectionError` too; READONLY also
  drops the connection (the next one may reach the new primary).

Everything else (admin, the channel layer, Celery, the gateway's hot state) uses redis-py.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import hiredis

from apps.connections.tcp import BatchedProtocol

logger = logging.getLogger(__name__)

PushHandler = Callable[[bytes, bytes], None]  # (channel, data)
_DISCARD = object()  # pending-reply marker for fire(): parse the reply, drop it
_CERT_REQS = {"none": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
# Error replies of a Redis that cannot serve now: loading after a restart, a replica after a
# fail-over, refused credentials, no permission for the command, out of memory, ...
_UNAVAILABLE = frozenset(
    {
        "LOADING",
        "READONLY",
        "MASTERDOWN",
        "NOAUTH",
        "WRONGPASS",
        "NOPERM",
        "MISCONF",
        "OOM",
        "BUSY",
        "TRYAGAIN",
        "CLUSTERDOWN",
    }
)
_DROP_CONNECTION = frozenset({"READONLY", "MASTERDOWN"})  # a reconnect may reach the new primary
# redis-py URL options that mean nothing to this client (it has its own timeouts): accepted, ignored.
_IGNORED_OPTIONS = frozenset(
    {
        "socket_timeout",
        "socket_connect_timeout",
        "socket_keepalive",
        "socket_read_size",
        "retry_on_timeout",
        "max_connections",
        "health_check_interval",
        "timeout",
        "protocol",
        "client_name",
    }
)
_TLS_OPTIONS = frozenset(
    {
        "ssl_cert_reqs",
        "ssl_ca_certs",
        "ssl_ca_path",
        "ssl_certfile",
        "ssl_keyfile",
        "ssl_check_hostname",
    }
)


class RespError(Exception):
    """An error reply from Redis (`-ERR ...`)."""

    @property
    def code(self) -> str:
        return str(self).split(" ", 1)[0]


class RespUnavailable(RespError, ConnectionError):
    """An error reply meaning this Redis cannot serve now (LOADING, READONLY, NOAUTH, ...)."""


def _classify(error: RespError) -> RespError:
    return RespUnavailable(*error.args) if error.code in _UNAVAILABLE else error


@dataclass(frozen=True)
class Address:
    host: str = "127.0.0.1"
    port: int = 6379
    path: str | None = None  # unix socket
    db: int = 0
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls: bool = False
    cert_reqs: str = "required"
    ca_certs: str | None = None
    ca_path: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    check_hostname: bool = True

    @classmethod
    def from_url(cls, url: str) -> Address:
        """Parse a Redis URL as redis-py does; a bad or unsupported option raises ValueError."""
        parts = urlparse(url)
        if parts.scheme not in ("redis", "rediss", "unix"):
            raise ValueError(
                f"unsupported Redis URL scheme {parts.scheme!r} (redis://, rediss:// or unix://)"
            )
        options = {name: values[-1] for name, values in parse_qs(parts.query).items()}
        fields: dict[str, Any] = {
            "username": _unquote(parts.username),
            "password": _unquote(parts.password),
        }
        try:
            fields["db"] = int(options.pop("db", 0))
            if parts.scheme == "unix":
                fields["path"] = parts.path
            else:
                fields["host"] = parts.hostname or "127.0.0.1"
                fields["port"] = parts.port or 6379
                if parts.path.strip("/"):
                    fields["db"] = int(parts.path.strip("/"))
        except ValueError:
            raise ValueError("the Redis URL's database and port must be numbers") from None
        tls_options = {name: unquote(options.pop(name)) for name in _TLS_OPTIONS & options.keys()}
        unknown = options.keys() - _IGNORED_OPTIONS
        if unknown:
            raise ValueError(f"unsupported Redis URL option(s): {', '.join(sorted(unknown))}")
        if tls_options and parts.scheme != "rediss":
            raise ValueError("ssl_* options need a rediss:// URL")
        if parts.scheme == "rediss":
            fields.update(tls=True, **_tls_fields(tls_options))
        return cls(**fields)

    @property
    def where(self) -> str:
        """Where, for messages (never the credentials)."""
        return self.path or f"{'rediss' if self.tls else 'redis'}://{self.host}:{self.port}"

    def ssl_context(self) -> ssl.SSLContext | None:
        return _ssl_context(self) if self.tls else None


def _tls_fields(options: dict[str, str]) -> dict[str, Any]:
    cert_reqs = options.get("ssl_cert_reqs", "required").lower().removeprefix("cert_")
    if cert_reqs not in _CERT_REQS:
        raise ValueError(
            f"ssl_cert_reqs must be required, optional or none, not {options['ssl_cert_reqs']!r}"
        )
    check_hostname = options.get("ssl_check_hostname", "true").lower()
    if check_hostname not in ("true", "false", "1", "0", "yes", "no"):
        raise ValueError(
            f"ssl_check_hostname must be true or false, not {options['ssl_check_hostname']!r}"
        )
    return {
        "cert_reqs": cert_reqs,
        "ca_certs": options.get("ssl_ca_certs"),
        "ca_path": options.get("ssl_ca_path"),
        "certfile": options.get("ssl_certfile"),
        "keyfile": options.get("ssl_keyfile"),
        "check_hostname": check_hostname in ("true", "1", "yes"),
    }


@functools.lru_cache(maxsize=8)
def _ssl_context(address: Address) -> ssl.SSLContext:
    """redis-py's semantics: verify against the CA file/path (else the system's), check the host name."""
    context = ssl.create_default_context(cafile=address.ca_certs, capath=address.ca_path)
    if address.certfile:
        context.load_cert_chain(address.certfile, address.keyfile)
    context.check_hostname = address.check_hostname and address.cert_reqs == "required"
    context.verify_mode = _CERT_REQS[address.cert_reqs]
    return context


def _unquote(value: str | None) -> str | None:
    return unquote(value) if value else None


def encode(args: tuple[Any, ...]) -> bytes:
    """One command in RESP (str, bytes, int and float arguments)."""
    try:
        return hiredis.pack_command(args)
    except TypeError:
        kinds = ", ".join(
            sorted({type(a).__name__ for a in args if not isinstance(a, str | bytes | int | float)})
        )
        raise TypeError(f"cannot send {kinds} to Redis") from None


class RespConnection(BatchedProtocol):
    """One Redis connection. `open()` it; `close()` it; it never reconnects by itself.

    With `reply_timeout`, a connection that leaves a command unanswered that long (while
    nothing else arrives either) is taken for dead and closed: everything waiting on it
    fails with `ConnectionError`. Leave it None for blocking commands (BLMPOP) and pub/sub.
    """

    def __init__(
        self, on_push: PushHandler | None = None, *, reply_timeout: float | None = None
    ) -> None:
        super().__init__()
        self.on_push = on_push
        self.reply_timeout = reply_timeout
        self._reader = hiredis.Reader(replyError=RespError)
        self._pending: collections.deque[Any] = collections.deque()
        self._closed: asyncio.Future[None] = self._loop.create_future()
        self._subscribed: asyncio.Future[None] | None = None
        self._awaiting_confirmations = 0
        self._heard_at = (
            0.0  # loop time of the last reply, or of the command that made the queue non-empty
        )
        self._watchdog: asyncio.TimerHandle | None = None

    @classmethod
    async def open(
        cls,
        url: str | Address,
        *,
        on_push: PushHandler | None = None,
        timeout: float = 5.0,
        reply_timeout: float | None = None,
    ) -> RespConnection:
        """Connect, log in and select the database within `timeout`; any failure is a `ConnectionError`."""
        address = url if isinstance(url, Address) else Address.from_url(url)
        loop = asyncio.get_running_loop()
        conn = cls(on_push, reply_timeout=reply_timeout)
        try:
            async with asyncio.timeout(timeout):
                if address.path:
                    await loop.create_unix_connection(lambda: conn, address.path)
                else:
                    context = address.ssl_context()
                    server_hostname = address.host if context is not None else None
                    await loop.create_connection(
                        lambda: conn,
                        address.host,
                        address.port,
                        ssl=context,
                        server_hostname=server_hostname,
                    )
                if address.password:
                    auth = (
                        (address.username, address.password)
                        if address.username
                        else (address.password,)
                    )
                    await conn._handshake("AUTH", *auth)
                if address.db:
                    await conn._handshake("SELECT", address.db)
        except BaseException as exc:
            conn.abort()
            if isinstance(exc, OSError | TimeoutError) and not isinstance(exc, ConnectionError):
                # Unreachable, a failed TLS handshake, no answer in time: all "Redis is down" to callers.
                reason = (
                    f"no answer within {timeout:g}s"
                    if isinstance(exc, TimeoutError)
                    else str(exc) or type(exc).__name__
                )
                raise ConnectionError(
                    f"cannot connect to Redis at {address.where}: {reason}"
                ) from exc
            raise
        return conn

    async def _handshake(self, *args: Any) -> None:
        try:
            await self.command(*args)
        except RespError as exc:  # a refused login is an outage of this hub's Redis, not a bug
            raise RespUnavailable(f"Redis refused {args[0]}: {exc}") from None

    # -- asyncio.Protocol --------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        reader = self._reader
        reader.feed(data)
        try:
            while (value := reader.gets()) is not False:
                self._on_value(value)
        except hiredis.ProtocolError as exc:  # nothing after it can be trusted
            self._fail(ConnectionError(f"Redis protocol error: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(
            ConnectionError(f"Redis connection lost: {exc}" if exc else "Redis connection closed")
        )

    # -- commands ----------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed.done()

    def command(self, *args: Any) -> asyncio.Future[Any]:
        """Queue a command; the future gets its reply (a `RespError` reply raises)."""
        future: asyncio.Future[Any] = self._loop.create_future()
        self._queue(encode(args), future)
        return future

    async def call(self, *args: Any) -> Any:
        return await self.command(*args)

    def fire(self, *args: Any) -> None:
        """Queue a command whose reply nobody waits for (errors are logged)."""
        self._queue(encode(args), _DISCARD)

    async def subscribe(self, *channels: str) -> None:
        """Enter pub/sub mode; messages then go to `on_push` (no other commands after this)."""
        if self._closed.done():
            raise ConnectionError("Redis connection closed")
        self._subscribed = self._loop.create_future()
        self._awaiting_confirmations = len(channels)
        self._write(encode(("SUBSCRIBE", *channels)))
        await self._subscribed

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        """Drop the connection now; whatever waits on it fails with ConnectionError."""
        self._fail(ConnectionError("Redis connection closed"))

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed)

    # -- internals ---------------------------------------------------------------------

    def _queue(self, data: bytes, waiter: Any) -> None:
        if self._closed.done():
            raise ConnectionError("Redis connection closed")
        if not self._pending:
            self._heard_at = self._loop.time()
            if self.reply_timeout is not None and self._watchdog is None:
                self._watchdog = self._loop.call_at(
                    self._heard_at + self.reply_timeout, self._check_replies
                )
        self._pending.append(waiter)
        self._write(data)

    def _check_replies(self) -> None:
        self._watchdog = None
        if not self._pending or self._closed.done():
            return
        assert self.reply_timeout is not None
        due = self._heard_at + self.reply_timeout
        if self._loop.time() >= due:
            self._fail(
                ConnectionError(
                    f"Redis sent no reply within {self.reply_timeout:g}s: connection given up"
                )
            )
        else:
            self._watchdog = self._loop.call_at(due, self._check_replies)

    def _on_value(self, value: Any) -> None:
        if isinstance(value, RespError):
            value = _classify(value)
        if self._subscribed is not None:
            self._on_pubsub(value)
            return
        if not self._pending:
            logger.warning("Redis sent a reply nobody asked for: %r", value)
            return
        self._heard_at = self._loop.time()
        waiter = self._pending.popleft()
        if waiter is _DISCARD:
            if isinstance(value, RespError):
                logger.warning("Redis refused a fire-and-forget command: %s", value)
        elif not waiter.done():
            if isinstance(value, RespError):
                waiter.set_exception(value)
            else:
                waiter.set_result(value)
        if isinstance(value, RespError) and value.code in _DROP_CONNECTION:
            self._fail(ConnectionError(f"Redis connection dropped after {value.code}: {value}"))

    def _on_pubsub(self, value: Any) -> None:
        if isinstance(value, list) and len(value) == 3:
            kind = value[0]
            if kind == b"message":
                if self.on_push is not None:
                    try:
                        self.on_push(value[1], value[2])
                    except Exception:  # boundary: one bad message must not kill the subscription
                        logger.exception("pub/sub message handler failed")
                return
            if kind == b"subscribe":
                self._awaiting_confirmations -= 1
                if (
                    self._awaiting_confirmations <= 0
                    and self._subscribed is not None
                    and not self._subscribed.done()
                ):
                    self._subscribed.set_result(None)
                return
        if (
            isinstance(value, RespError)
            and self._subscribed is not None
            and not self._subscribed.done()
        ):
            self._subscribed.set_exception(value)

    def _fail(self, exc: Exception) -> None:
        if not self._closed.done():
            self._closed.set_result(None)
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if self._transport is not None:
            self._transport.abort()
        waiters = [w for w in self._pending if w is not _DISCARD]
        self._pending.clear()
        if self._subscribed is not None:
            waiters.append(self._subscribed)
        for waiter in waiters:
            if not waiter.done():
                waiter.set_exception(exc)
                waiter.exception()  # retrieved: a waiter whose caller left must not log noise


class RespClient:
    """A lazily (re)connected command connection: `call()` waits for a reply, `fire()` does not.

    A lost connection fails the commands waiting on it (`ConnectionError`); the next command
    connects again. `reply_timeout` bounds how long any command may wait for Redis.
    """

    def __init__(
        self, url: str, *, connect_timeout: float = 5.0, reply_timeout: float = 10.0
    ) -> None:
        self.url = url
        self.address = Address.from_url(
            url
        )  # a bad URL fails here, at start-up, not at the first call
        self.connect_timeout = connect_timeout
        self.reply_timeout = reply_timeout
        self._conn: RespConnection | None = None
        self._connecting: asyncio.Task[RespConnection] | None = None

    async def connection(self) -> RespConnection:
        conn = self._conn
        if conn is not None and not conn.closed:
            return conn
        connecting = self._connecting
        if connecting is None or connecting.done():
            connecting = self._connecting = asyncio.get_running_loop().create_task(
                RespConnection.open(
                    self.address, timeout=self.connect_timeout, reply_timeout=self.reply_timeout
                )
            )
        try:
            conn = self._conn = await asyncio.shield(connecting)
        finally:
            if connecting.done() and self._connecting is connecting:
                self._connecting = None
        return conn

    async def call(self, *args: Any) -> Any:
        conn = self._conn
        if conn is None or conn.closed:
            conn = await self.connection()
        return await conn.command(*args)

    async def fire(self, *args: Any) -> None:
        """Send without waiting for the reply; awaits only when a (re)connect is needed."""
        conn = self._conn
        if conn is None or conn.closed:
            conn = await self.connection()
        conn.fire(*args)

    async def aclose(self) -> None:
        if self._connecting is not None:
            self._connecting.cancel()
        if self._conn is not None:
            self._conn.close()
            await self._conn.wait_closed()
            self._conn = None
