"""Runs as MCP tasks (2025-11-25, experimental; basic/utilities/tasks in the spec).

A `tools/call` of one of the hub's autonomous tools that carries `task` starts the run and answers
at once with a `CreateTaskResult`; the task id is a row (`McpTask`) that maps to the run, so
`tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` work on any web process (the state
is the run's, in the database; waiting wakes on the run's own channel-layer events). While the run
goes, the process that created the task sends `notifications/progress` (with the call's progress
token) and, at its end, `notifications/tasks/status` to the session's stream — both optional in
the protocol, so a client polling with `tasks/get` misses nothing if that process goes away.

Only sessions that negotiated 2025-11-25 see the capability; older ones (and the stateless
2026-07-28 revision, where tasks became an extension) get the plain call, `task` ignored, as the
spec asks of a receiver that does not declare it. A tool without `execution.taskSupport` (every
backend tool, and the hub's non-run tools) answers a task-augmented call with -32601.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from apps.catalog.models import HUB_SERVER
from apps.chat.runs import services
from apps.chat.runs.models import Run
from apps.core import public_url
from apps.core.threads import in_thread
from apps.credentials.errors import CredentialsMissing
from apps.gateway import hub_tools, jsonrpc
from apps.gateway.context import (
    Context,
    meta_of,
    needs_credentials,
    paginate,
    param_string,
    progress_sender,
)
from apps.gateway.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, RpcError
from apps.gateway.mailbox import mailbox
from apps.gateway.models import McpTask
from apps.gateway.streams import SESSION_MESSAGE, session_group
from apps.toolsets import calls
from apps.toolsets.exposure import Exposed

logger = logging.getLogger(__name__)

SINCE = "2025-11-25"
CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
RELATED_TASK = "io.modelcontextprotocol/related-task"
IMMEDIATE_RESPONSE = "io.modelcontextprotocol/model-immediate-response"
POLL_INTERVAL_MS = 2000
TERMINAL = ("completed", "failed", "cancelled")


def supported(version: str) -> bool:
    """Tasks are in the handshake revisions from 2025-11-25 on (2026-07-28 moved them out)."""
    return version in HANDSHAKE_PROTOCOL_VERSIONS and version >= SINCE


def requested(ctx: Context, params: dict[str, Any]) -> bool:
    return "task" in params and supported(ctx.protocol_version)


# -- creating ------------------------------------------------------------------------


async def call(ctx: Context, name: str, arguments: dict[str, Any], params: dict[str, Any]):
    """A task-augmented `tools/call`: the run starts (or the backend's task is created) and its
    task comes back at once."""
    exposed = ctx.view.tools.get(name)
    if exposed is not None and _backend_supports_tasks(exposed):
        return await _call_backend(ctx, exposed, arguments, params)
    if exposed is None or not (
        exposed.server == HUB_SERVER and exposed.backend_name in hub_tools.SERVERS_OF
    ):
        raise RpcError(
            METHOD_NOT_FOUND,
            f"Tool {name} cannot be called as a task (its execution.taskSupport is forbidden): "
            "call it without 'task'. The hub's autonomous_* tools can, and backend tools "
            "whose execution.taskSupport is optional or required.",
        )
    ttl = _ttl(params.get("task"))

    async def start() -> dict[str, Any]:
        try:
            task = await in_thread(_create)(ctx, name, exposed.backend_name, arguments, ttl)
        except services.RunError as exc:  # bad input: a clear error, nothing started
            raise RpcError(INVALID_PARAMS, exc.message) from None
        _watch(ctx, task, meta_of(params).get("progressToken"))
        return {
            "task": _task_json(task, task.run),
            "_meta": {
                IMMEDIATE_RESPONSE: f"Started run {task.run_id} as task {task.pk}; "
                "its answer comes back when the task completes."
            },
        }

    return await _logged(ctx, exposed, arguments, start())


async def _logged(ctx: Context, exposed: Exposed, arguments: dict[str, Any], work) -> dict:
    """A task-creating call goes into the call log like any call (toolsets.calls)."""
    return await calls.logged(
        user_id=ctx.principal.user_id,
        endpoint_id=ctx.endpoint.id,
        exposed=exposed,
        arguments=arguments,
        work=work,
    )


def check_plain_call(ctx: Context, exposed: Exposed) -> None:
    """A tool whose taskSupport is `required` runs only as a task: -32601 otherwise (the spec)."""
    if (exposed.entry.get("execution") or {}).get("taskSupport") == "required":
        how = (
            "call it with 'task'"
            if supported(ctx.protocol_version)
            else f"that needs an MCP {SINCE} session (this one speaks {ctx.protocol_version})"
        )
        raise RpcError(
            METHOD_NOT_FOUND,
            f"Tool {exposed.name} runs only as a task (taskSupport required): {how}",
        )


def _ttl(task: Any) -> int:
    if not isinstance(task, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: 'task' must be an object")
    ttl = task.get("ttl")
    if ttl is None:
        return settings.MCPHUB_TASK_TTL_MS
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0:
        raise RpcError(INVALID_PARAMS, "Invalid params: 'task.ttl' must be milliseconds (>= 0)")
    return min(ttl, settings.MCPHUB_TASK_MAX_TTL_MS)


def _create(ctx: Context, name: str, tool: str, arguments: dict[str, Any], ttl: int) -> McpTask:
    with transaction.atomic():
        run = hub_tools.start_for(ctx.principal.user_id, ctx.endpoint.id, tool, arguments)
        return McpTask.objects.create(
            owner_id=ctx.principal.user_id,
            endpoint_id=ctx.endpoint.id,
            tool=name,
            run=run,
            ttl_ms=ttl,
            expires_at=timezone.now() + timedelta(milliseconds=ttl),
        )


# -- the task as the protocol shows it ------------------------------------------------


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _live_status(run: Run) -> tuple[str, str]:
    """The status (and message) of a task whose run has not been seen to end."""
    if run.cancel_requested:
        return "cancelled", "The run was cancelled."
    if run.status == Run.Status.QUEUED:
        return "working", "Queued."
    if run.status == Run.Status.RUNNING:
        return "working", hub_tools._bound(run, run.rounds)[1] + "."
    if run.status == Run.Status.WAITING_APPROVAL:
        page = public_url.absolute(reverse("web:run", args=[run.pk]))
        return "input_required", f"Waiting for your approval of a tool call on {page}"
    if run.status == Run.Status.SUCCEEDED:
        return "completed", f"Done after {run.rounds} rounds."
    if run.status == Run.Status.CANCELLED:
        return "cancelled", "The run was cancelled."
    return "failed", f"The run ended {run.status} after {run.rounds} rounds: {run.error}"


def _freeze(task: McpTask, run: Run) -> McpTask:
    """Once the run has ended (or was cancelled), its task's status and result never change."""
    if task.status or run is None:
        return task
    status, message = _live_status(run)
    if status not in TERMINAL:
        return task
    if run.status in Run.ACTIVE:  # cancelled before the worker stopped it
        result = hub_tools.text_result(
            "The run was cancelled.", hub_tools._summary(run), error=True
        )
    else:
        result = hub_tools._final(run)
    frozen = {"status": status, "status_message": message, "result": result}
    frozen["updated_at"] = timezone.now()
    # Only the first writer freezes it (two processes may see the end at once).
    if McpTask.objects.filter(pk=task.pk, status="").update(**frozen):
        for field, value in frozen.items():
            setattr(task, field, value)
    else:
        task.refresh_from_db(fields=list(frozen))
    return task


def _task_json(task: McpTask, run: Run | None) -> dict[str, Any]:
    if run is None:  # the backend's own task, under this task's id
        return {**(task.backend_task or {}), "taskId": str(task.pk)}
    if task.status:
        status, message, updated = task.status, task.status_message, task.updated_at
    else:
        (status, message), updated = _live_status(run), run.started_at or task.created_at
    entry: dict[str, Any] = {
        "taskId": str(task.pk),
        "status": status,
        "createdAt": _iso(task.created_at),
        "lastUpdatedAt": _iso(max(updated, task.created_at)),
        "ttl": task.ttl_ms,
        "pollInterval": POLL_INTERVAL_MS,
    }
    if message:
        entry["statusMessage"] = message
    return entry


# -- reading -------------------------------------------------------------------------


def _mine(ctx: Context):
    return McpTask.objects.filter(
        owner_id=ctx.principal.user_id, endpoint_id=ctx.endpoint.id
    ).select_related("run")


def _load(ctx: Context, params: dict[str, Any]) -> McpTask:
    """The caller's task named in `params` (frozen if its run has ended), or -32602."""
    task_id = param_string(params, "taskId")
    try:
        key = uuid.UUID(task_id)
    except ValueError:
        key = None
    task = _mine(ctx).filter(pk=key).first() if key else None
    if task is None:
        raise RpcError(
            INVALID_PARAMS, "Failed to retrieve task: Task not found", {"taskId": task_id}
        )
    if task.expires_at is not None and task.expires_at <= timezone.now():
        raise RpcError(
            INVALID_PARAMS, "Failed to retrieve task: Task has expired", {"taskId": task_id}
        )
    return _freeze(task, task.run)


async def get(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    task = await in_thread(_load)(ctx, params)
    if task.run is None and not task.status:
        await _refresh(ctx, task)
    return _task_json(task, task.run)


async def result(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """The tool result once the task has ended (waiting for it until then): what the call
    without `task` would have answered, tagged with the task it belongs to."""
    task = await in_thread(_load)(ctx, params)
    if task.run is None:
        await _backend_result(ctx, task)
    elif not task.status:
        await hub_tools._follow(task.run, None, cancel_with_caller=False)
        task = await in_thread(_load)(ctx, params)
    answer = dict(task.result or {})
    answer["_meta"] = {**(answer.get("_meta") or {}), RELATED_TASK: {"taskId": str(task.pk)}}
    return answer


def _page(ctx: Context, params: dict[str, Any]) -> tuple[list[McpTask], str | None]:
    now = timezone.now()
    _mine(ctx).filter(expires_at__lte=now).delete()  # past their ttl: gone (the runs stay)
    tasks = _mine(ctx).exclude(expires_at__lte=now)
    size = settings.MCPHUB_TASK_PAGE_SIZE
    start, next_cursor = paginate(params, tasks.count(), size)
    return [_freeze(task, task.run) for task in tasks[start : start + size]], next_cursor


async def list_tasks(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    page, next_cursor = await in_thread(_page)(ctx, params)
    passed = [task for task in page if task.run is None and not task.status]
    # A backend's live tasks as it tells now; one it cannot reach shows as last seen.
    await asyncio.gather(*(_refresh(ctx, task) for task in passed), return_exceptions=True)
    listed: dict[str, Any] = {"tasks": [_task_json(task, task.run) for task in page]}
    if next_cursor:
        listed["nextCursor"] = next_cursor
    return listed


def _cancel(ctx: Context, params: dict[str, Any]) -> McpTask:
    task = _load(ctx, params)
    if task.status:
        raise RpcError(
            INVALID_PARAMS,
            f"Cannot cancel task: it is already {task.status}",
            {"taskId": str(task.pk), "status": task.status},
        )
    try:
        run = services.request_cancel(run=task.run)
    except services.RunError:  # it ended meanwhile
        task.run.refresh_from_db()
        run = task.run
    run.cancel_requested = True  # cancelled now, whatever the worker still does
    return _freeze(task, run)


async def cancel(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    task = await in_thread(_load)(ctx, params)
    if task.run is None and not task.status:  # the backend cancels its own task
        raw = await _backend(ctx, task.server, "tasks/cancel", {"taskId": task.backend_task_id})
        await in_thread(_seen)(task, raw)
        return _task_json(task, None)
    task = await in_thread(_cancel)(ctx, params)
    return _task_json(task, task.run)


# -- a backend's own tasks, passed through ---------------------------------------------


def _backend_supports_tasks(exposed: Exposed) -> bool:
    execution = exposed.entry.get("execution") or {}
    return exposed.server != HUB_SERVER and execution.get("taskSupport") in ("optional", "required")


async def _backend(ctx: Context, server: str, method: str, params: dict[str, Any]) -> dict:
    """A task request to `server` as the caller (their spec: their credentials, their partition)."""
    from mcp import MCPError

    from apps.connections.default import get_pool
    from apps.connections.errors import PoolError

    try:
        spec = ctx.view.spec(server)
        return await get_pool().task_request(spec, method, params)
    except KeyError:
        raise RpcError(
            INVALID_PARAMS, f"Failed to retrieve task: {server} is no longer on this endpoint"
        ) from None
    except MCPError as exc:
        raise RpcError(exc.code, exc.message, exc.data) from None
    except CredentialsMissing as exc:
        raise needs_credentials(exc) from None
    except PoolError as exc:
        raise RpcError(INTERNAL_ERROR, f"{server} is unavailable: {exc.message}") from None


async def _call_backend(
    ctx: Context, exposed: Exposed, arguments: dict[str, Any], params: dict[str, Any]
) -> dict[str, Any]:
    """The backend creates the task; the client gets it under a hub task id (logged as a call)."""
    task_params = {"ttl": _ttl(params.get("task"))}
    forwarded = {"name": exposed.backend_name, "arguments": arguments, "task": task_params}

    async def create() -> dict[str, Any]:
        raw = await _backend(ctx, exposed.server, "tools/call", forwarded)
        backend_task = raw.get("task")
        if not isinstance(backend_task, dict) or not isinstance(backend_task.get("taskId"), str):
            return raw  # the backend answered at once after all: that is the answer
        task = await in_thread(_create_passthrough)(ctx, exposed, backend_task)
        return {**raw, "task": _task_json(task, None)}

    return await _logged(ctx, exposed, arguments, create())


def _create_passthrough(ctx: Context, exposed: Exposed, backend_task: dict[str, Any]) -> McpTask:
    ttl = backend_task.get("ttl")
    ttl = ttl if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl >= 0 else None
    return McpTask.objects.create(
        owner_id=ctx.principal.user_id,
        endpoint_id=ctx.endpoint.id,
        tool=exposed.name,
        server=exposed.server,
        backend_task_id=backend_task["taskId"],
        backend_task=backend_task,
        ttl_ms=ttl,
        expires_at=None if ttl is None else timezone.now() + timedelta(milliseconds=ttl),
    )


def _seen(task: McpTask, backend_task: dict[str, Any], result: dict | None = None) -> None:
    """Keep what the backend said of its task; a terminal status (and result) is final."""
    status = backend_task.get("status")
    task.backend_task = {**backend_task, "taskId": task.backend_task_id}
    fields = ["backend_task", "updated_at"]
    if status in TERMINAL and not task.status:
        task.status, task.status_message = status, str(backend_task.get("statusMessage") or "")
        fields += ["status", "status_message"]
    if result is not None:
        task.result = result
        fields.append("result")
    task.save(update_fields=fields)


async def _refresh(ctx: Context, task: McpTask) -> None:
    raw = await _backend(ctx, task.server, "tasks/get", {"taskId": task.backend_task_id})
    await in_thread(_seen)(task, raw)


async def _backend_result(ctx: Context, task: McpTask) -> None:
    """Wait for the backend's task to end (polling it at the interval it asks, within bounds,
    rather than holding a pool request open for as long as it takes), then fetch its result."""
    if task.result is not None:
        return
    while not task.status:
        await _refresh(ctx, task)
        if task.status:
            break
        interval = (task.backend_task or {}).get("pollInterval") or POLL_INTERVAL_MS
        await asyncio.sleep(min(max(float(interval), 100.0), 5000.0) / 1000)
    raw = await _backend(ctx, task.server, "tasks/result", {"taskId": task.backend_task_id})
    meta = {k: v for k, v in (raw.get("_meta") or {}).items() if k != RELATED_TASK}
    answer = {**raw, "_meta": meta} if meta else {k: v for k, v in raw.items() if k != "_meta"}
    await in_thread(_seen)(task, task.backend_task or {}, answer)


# -- telling the session as the run goes -----------------------------------------------


@dataclasses.dataclass
class _SessionStream:
    """Notifications to a session's own stream (its GET stream, or legacy SSE), from any process."""

    session_id: str
    can_request = False

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        message = jsonrpc.notification(method, params)
        await mailbox().publish(
            session_group(self.session_id), {"type": SESSION_MESSAGE, "message": message}
        )


_watchers: set[asyncio.Task[None]] = set()


def _watch(ctx: Context, task: McpTask, progress_token: Any) -> None:
    """Follow the run in this process: progress with the call's token, a status notification
    when it waits for an approval and goes on after it, and one at the task's end."""
    if ctx.session is None:
        return
    stream = _SessionStream(ctx.session.id)
    progress = progress_sender(dataclasses.replace(ctx, emitter=stream), progress_token)

    sent: list[str] = [_live_status(task.run)[0]]  # the CreateTaskResult said `working`

    async def moved(run: Run) -> None:
        status = _live_status(run)[0]
        if status != sent[-1] and status not in TERMINAL:  # the end is told once it is frozen
            sent.append(status)
            await stream.notify("notifications/tasks/status", _task_json(task, run))

    async def watch() -> None:
        try:
            await hub_tools._follow(task.run, progress, cancel_with_caller=False, on_read=moved)
            ended = await in_thread(_reload)(task.pk)
            await stream.notify("notifications/tasks/status", _task_json(ended, ended.run))
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - notifications are best effort; tasks/get still tells
            logger.exception("following task %s failed", task.pk)

    watcher = asyncio.get_running_loop().create_task(watch(), name=f"mcphub-task-{task.pk}")
    _watchers.add(watcher)
    watcher.add_done_callback(_watchers.discard)


def _reload(task_id: uuid.UUID) -> McpTask:
    task = McpTask.objects.select_related("run").get(pk=task_id)
    return _freeze(task, task.run)


def _only_where_supported(handler):
    """tasks/* exist for sessions that negotiated them; elsewhere they are unknown methods."""

    async def checked(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        if not supported(ctx.protocol_version):
            raise RpcError(
                METHOD_NOT_FOUND,
                f"Method not found: tasks need MCP {SINCE} (this session speaks {ctx.protocol_version})",
            )
        return await handler(ctx, params)

    return checked


HANDLERS = {
    method: _only_where_supported(handler)
    for method, handler in {
        "tasks/get": get,
        "tasks/result": result,
        "tasks/list": list_tasks,
        "tasks/cancel": cancel,
    }.items()
}
