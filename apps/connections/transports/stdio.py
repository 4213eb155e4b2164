"""Stdio transport that owns its child's process group and captures its stderr.

The SDK's `stdio_client` also starts children in a new session, but it hides the
process and sends stderr to a file: the pool needs the pid (stats, leak checks, killing
a hung child at once) and the stderr tail (the only clue to why a child died).

No child outlives the process that started it, even one that ignores stdin EOF and
SIGTERM: the child is started with a parent-death signal (SIGKILL when the starting
thread dies: a crash, SIGKILL, any exit), and an orderly exit also kills every group
still running (`atexit`), which reaches grandchildren the death signal does not.
"""

from __future__ import annotations

import asyncio
import atexit
import errno
import json
import logging
import os
import shutil
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from apps.connections.sdk import TransportStreams
from apps.connections.specs import ServerSpec
from apps.connections.stderr import StderrTail

if TYPE_CHECKING:
    from apps.connections.transports.lean_http import HttpLink

logger = logging.getLogger(__name__)

# The only variables a child inherits from the worker: no secrets of ours leak into it.
BASE_ENV_KEYS = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
_KILL_WAIT = 1.0
_EXIT_POLL = 0.01
_CLOSE_WAIT = 2.0
# util-linux `setpriv` (in every Debian, so in our image) sets the death signal and execs the
# command in place: same pid, ~1 ms. Elsewhere a minimal Python does the same (~20 ms).
_SETPRIV = shutil.which("setpriv")
_PY_GUARD = (
    "import ctypes,os,sys;ctypes.CDLL(None).prctl(1,9);"  # PR_SET_PDEATHSIG, SIGKILL
    "os.getppid()==int(sys.argv[1]) or os._exit(70);"  # the parent died before prctl: exit now
    "os.execvp(sys.argv[2],sys.argv[2:])"
)
_live_groups: set[int] = (
    set()
)  # process groups of children this process started and not yet stopped


def child_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    base = {
        k: v
        for k in BASE_ENV_KEYS
        if (v := os.environ.get(k)) is not None and not v.startswith("()")
    }
    return base | (extra or {})


class ChildProcess:
    """What the owner of a connection can see and steer of its child process (or HTTP session)."""

    def __init__(self, stderr: StderrTail, on_exit: Callable[[str], None] | None = None) -> None:
        self.stderr = stderr
        self.on_exit = on_exit
        self.grace = 2.0  # seconds between closing stdin and SIGTERM; 0 for a hung child
        self.process: anyio.abc.Process | None = None
        self.session_expired = False  # an HTTP server answered 404 for our session id
        self.http: HttpLink | None = (
            None  # a Streamable HTTP session's link, for the lean request path
        )
        self.stdio: StdioLink | None = None  # a stdio child's link, for the lean request path
        # An in-process backend's calls, made without JSON-RPC (transports/openapi.py).
        self.direct: Any = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    def exit_description(self) -> str:
        code = self.process.returncode if self.process else None
        if code is None:
            return "closed its stdout"
        if code < 0:
            return f"was killed by signal {signal.Signals(-code).name}"
        return f"exited with code {code}"

    def _notify_exit(self, reason: str) -> None:
        if self.on_exit is not None:
            self.on_exit(reason)


class StdioLink:
    """Lets plain requests skip the SDK session on a stdio child (transports/lean_stdio.py).

    The reader hands each line from the child to `take` first: a response to one of the
    lean requests (`pending`) resolves its future, a log line a relaying call claims goes
    to `on_log`, in the order read; everything else goes on to the SDK session as before.
    """

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.on_log: Callable[[dict[str, Any]], bool] | None = None
        self.closed = False

    async def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(line)

    def take(self, data: dict[str, Any]) -> bool:
        if "method" in data:
            if (
                data["method"] == "notifications/message"
                and "id" not in data
                and self.on_log is not None
            ):
                return self.on_log(data)
            return False
        request_id = data.get("id")
        future = self.pending.pop(request_id, None) if type(request_id) is int else None
        if future is None:
            return False
        if not future.done():
            future.set_result(data)
        return True

    def close(self) -> None:
        """The child's stdout ended: no pending request will be answered."""
        self.closed = True
        pending, self.pending = self.pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(
                    MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
                )


def guarded_command(argv: list[str]) -> list[str]:
    """`argv`, run so that the child is SIGKILLed when the thread that starts it dies (Linux)."""
    if not sys.platform.startswith("linux"):
        return argv
    if _SETPRIV is not None:
        return [_SETPRIV, "--pdeathsig", "KILL", "--", *argv]
    return [sys.executable, "-I", "-S", "-c", _PY_GUARD, str(os.getpid()), *argv]


def _kill_live_groups() -> None:
    for pgid in list(_live_groups):
        _signal_group(pgid, signal.SIGKILL)


atexit.register(_kill_live_groups)


def _check_executable(command: str, env: dict[str, str], cwd: str | None) -> None:
    """Fail as exec would: behind the death-signal guard a missing command is only the guard's exit 127."""
    if "/" in command:
        path = os.path.join(cwd or os.getcwd(), command)
        found = os.path.isfile(path) and os.access(path, os.X_OK)
    else:
        found = shutil.which(command, path=env.get("PATH", os.defpath)) is not None
    if not found:
        raise FileNotFoundError(errno.ENOENT, "command not found or not executable", command)


@asynccontextmanager
async def stdio_transport(spec: ServerSpec, child: ChildProcess) -> AsyncIterator[TransportStreams]:
    env = child_environment(dict(spec.env))
    _check_executable(spec.command, env, spec.cwd)
    process = await anyio.open_process(
        guarded_command([spec.command, *spec.args]),
        env=env,
        cwd=spec.cwd,
        start_new_session=True,  # the child leads its own group: killpg reaches all its descendants
    )
    child.process = process
    child.stdio = link = StdioLink(process)
    _live_groups.add(process.pid)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_pump_stdout, process, read_writer, child, link)
        tg.start_soon(_pump_stdin, process, write_reader, read_writer)
        tg.start_soon(_pump_stderr, process, child.stderr)
        try:
            yield read_stream, write_stream
        finally:
            # Shielded and bounded: a cancelled owner must still never leak a process.
            with anyio.CancelScope(shield=True):
                read_stream.close()
                write_stream.close()
                await stop_process_group(process, child.grace)
                _live_groups.discard(process.pid)
                link.close()
                child.stdio = None
            tg.cancel_scope.cancel()


async def _pump_stdout(
    process: anyio.abc.Process,
    sink: MemoryObjectSendStream[SessionMessage | Exception],
    child: ChildProcess,
    link: StdioLink,
) -> None:
    assert process.stdout is not None
    buffer = b""
    async with sink:
        with suppress(
            anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError
        ):
            while True:
                chunk = await process.stdout.receive()
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    if line.strip() and (message := _parse(line, link)) is not None:
                        await sink.send(message)
    # EOF: the child is gone (or closed stdout); tell the owner before the session notices.
    link.close()
    await _settle_exit(process)
    child._notify_exit(child.exit_description())


def _parse(line: bytes, link: StdioLink | None = None) -> SessionMessage | Exception | None:
    """The line as a message for the SDK session; None when the lean path took it."""
    try:
        data = json.loads(line)
    except ValueError as exc:
        return exc
    if link is not None and type(data) is dict and link.take(data):
        return None
    # Fast path for the common case, a successful response: the session validates its
    # `result` against the request's result type anyway (or hands it on raw), so building
    # the envelope without pydantic's union matching saves ~30 µs per call.
    if (
        type(data) is dict
        and len(data) == 3
        and type(data.get("result")) is dict
        and data.get("jsonrpc") == "2.0"
    ):
        request_id = data.get("id")
        if type(request_id) is int or type(request_id) is str:
            response = types.JSONRPCResponse.model_construct(
                jsonrpc="2.0", id=request_id, result=data["result"]
            )
            return SessionMessage(response)
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(data, by_name=False))
    except ValueError as exc:
        return exc


async def _pump_stdin(
    process: anyio.abc.Process,
    source: MemoryObjectReceiveStream[SessionMessage],
    reader_sink: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    assert process.stdin is not None
    try:
        async with source:
            async for message in source:
                lines = [message.message.model_dump_json(by_alias=True, exclude_unset=True)]
                # Whatever else is already waiting goes out in the same write (one wake-up of the child).
                while True:
                    try:
                        queued = source.receive_nowait().message
                        lines.append(queued.model_dump_json(by_alias=True, exclude_unset=True))
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                await process.stdin.send(("\n".join(lines) + "\n").encode())
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        # Writing failed, so the child cannot hear us: end the session rather than hang requests.
        await reader_sink.aclose()


async def _pump_stderr(process: anyio.abc.Process, tail: StderrTail) -> None:
    assert process.stderr is not None
    with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        while True:
            tail.feed(await process.stderr.receive())


async def _settle_exit(process: anyio.abc.Process, timeout: float = 0.5) -> None:
    """Give a child that closed stdout a moment to be reaped, so its exit code can be reported."""
    with anyio.move_on_after(timeout):
        while process.returncode is None:  # noqa: ASYNC110 - the child's exit is not an event here
            await anyio.sleep(_EXIT_POLL)


async def stop_process_group(process: anyio.abc.Process, grace: float) -> None:
    """Close stdin, wait `grace`, then SIGTERM and SIGKILL the whole group; always bounded."""
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    if not await _exited_within(process, grace):
        _signal_group(process.pid, signal.SIGTERM)
        if not await _exited_within(process, _KILL_WAIT):
            _signal_group(process.pid, signal.SIGKILL)
            await _exited_within(process, _KILL_WAIT)
    # The leader is gone; grandchildren left in its group die with it, not as orphans.
    _signal_group(process.pid, signal.SIGKILL)
    with anyio.move_on_after(_CLOSE_WAIT):
        await process.aclose()


async def _exited_within(process: anyio.abc.Process, timeout: float) -> bool:
    # Not process.wait(): on asyncio it also waits for pipe EOF, which a grandchild can hold open.
    with anyio.move_on_after(timeout):
        while process.returncode is None:  # noqa: ASYNC110 - the child's exit is not an event here
            await anyio.sleep(_EXIT_POLL)
    return process.returncode is not None


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
