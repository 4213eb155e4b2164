"""The hub's own MCP tools, served on every endpoint as the built-in server `hub`.

They are catalog rows like any server's (`ensure_hub_server`), so users enable and disable them
like any tool (`mcp_enable --user alice 'hub.*'`) and they are named by the endpoint's strategy.
`answer()` is registered as the built-in server `hub` (apps.gateway.apps), so every call to one,
from an MCP client, a chat turn or a run, comes to it instead of the pool (toolsets.calls). Every
tool acts only as the calling user: their servers, their endpoint's enabled tools, their runs.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from django.db import transaction

from apps.catalog.models import HUB_SERVER
from apps.chat.runs import selectors, services
from apps.chat.runs.loop import run_group
from apps.chat.runs.models import Run
from apps.core.threads import in_thread
from apps.toolsets.calls import BuiltinCall

Progress = Callable[[float, float | None, str | None], Awaitable[None]]

_LIMITS = {
    "max_rounds": {
        "type": "integer",
        "minimum": 1,
        "maximum": services.MAX_ROUNDS_CAP,
        "description": "Most model rounds (default 10000).",
    },
    "model": {
        "type": "string",
        "description": "One of your LLM providers by name, or a model of your default provider.",
    },
    "wait": {
        "type": "boolean",
        "default": True,
        "description": "false: return the run id at once; poll it with get_run.",
    },
}
_TASK = {
    "type": "string",
    "description": "What to do, in plain words; the final answer comes back.",
}
# MCP 2025-11-25 tasks: a task-augmented call of an autonomous tool returns at once with a task
# that maps to the run (apps.gateway.mcp_tasks); without one, the call waits as before.
_TASKS = {"taskSupport": "optional"}
_RUN_ID = {"type": "object", "properties": {"run_id": {"type": "string"}}, "required": ["run_id"]}

TOOLS: dict[str, dict[str, Any]] = {
    "list_available_mcps": {
        "description": "The MCP servers you may use through this hub, with status and tool counts.",
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": True},
    },
    "autonomous_with_mcp": {
        "description": "Hand a task to an LLM that works through one MCP server's tools, round after round, and returns the final answer.",
        "inputSchema": {
            "type": "object",
            "properties": {"mcp_name": {"type": "string"}, "task": _TASK, **_LIMITS},
            "required": ["mcp_name", "task"],
        },
        "execution": _TASKS,
    },
    "autonomous_with_multiple_mcps": {
        "description": "Hand a task to an LLM that works with the tools of several MCP servers and returns the final answer.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "mcp_names": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "task": _TASK,
                **_LIMITS,
            },
            "required": ["mcp_names", "task"],
        },
        "execution": _TASKS,
    },
    "autonomous_discover_and_execute": {
        "description": "Hand a task to an LLM that may use every tool you enabled here and returns the final answer.",
        "inputSchema": {
            "type": "object",
            "properties": {"task": _TASK, **_LIMITS},
            "required": ["task"],
        },
        "execution": _TASKS,
    },
    "get_run": {
        "description": "A run's status, rounds so far, and its final answer once done.",
        "inputSchema": _RUN_ID,
        "annotations": {"readOnlyHint": True},
    },
    "cancel_run": {"description": "Cancel one of your runs.", "inputSchema": _RUN_ID},
    "resume_run": {
        "description": "Resume one of your runs that ended interrupted, failed or incomplete: it goes on from its last completed round and returns the final answer.",
        "inputSchema": {
            "type": "object",
            "properties": {"run_id": {"type": "string"}, "wait": _LIMITS["wait"]},
            "required": ["run_id"],
        },
    },
}
# The row's URL: a remote server has one (a check constraint says so), but calls to the built-in
# server go to `answer()` by its name, never here, and nothing compares a URL with it.
PLACEHOLDER_URL = "http://builtin.mcphub.invalid/"
# A waiting call wakes on the run's own events (the channel its page listens on); those are best
# effort, so it also reads the run this often without one.
FALLBACK_SECONDS = 5.0


def ensure_hub_server():
    """Create or refresh the built-in `hub` server and its tools in the catalog (idempotent)."""
    from apps.catalog.introspection import estimate_tokens
    from apps.catalog.models import McpServer, Tool

    with transaction.atomic():
        server, _ = McpServer.objects.update_or_create(
            name=HUB_SERVER,
            defaults={
                "transport": McpServer.Transport.STREAMABLE_HTTP,
                "url": PLACEHOLDER_URL,
                "display_name": "MCP Hub",
                "description": "The hub's own tools: hand tasks to an LLM that works with your MCP servers.",
            },
        )
        McpServer.objects.filter(pk=server.pk).update(status=McpServer.Status.HEALTHY)
        for name, entry in TOOLS.items():
            Tool.objects.update_or_create(
                server=server,
                name=name,
                defaults={
                    "description": entry["description"],
                    "input_schema": entry["inputSchema"],
                    "annotations": entry.get("annotations"),
                    "execution": entry.get("execution"),
                    "available": True,
                    "token_estimate": estimate_tokens({"name": name, **entry}),
                },
            )
    return server


def text_result(
    text: str, structured: dict[str, Any] | None = None, *, error: bool = False
) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": error}
    if structured is not None:
        result["structuredContent"] = structured
    return result


async def answer(call: BuiltinCall) -> dict[str, Any]:
    """One hub tool call as its user on its endpoint: an MCP tool result, never raising but on cancel."""
    handler = HANDLERS.get(call.tool)
    if handler is None:
        return text_result(f"Unknown hub tool: {call.tool}.", error=True)
    try:
        return await handler(call.user_id, call.endpoint_id, call.arguments, call.progress)
    except services.RunError as exc:
        return text_result(exc.message, error=True)


def _user(user_id: int):
    from apps.accounts.models import User

    return User.objects.get(pk=user_id)


async def list_available_mcps(
    user_id: int, endpoint_id: int, arguments: dict[str, Any], progress: Progress | None
) -> dict[str, Any]:
    servers = await in_thread(_servers)(user_id, endpoint_id)
    lines = [
        f"{s['name']} ({s['status']}): {s['enabled_tools']} of {s['tools']} tools enabled here"
        for s in servers
    ]
    return text_result(
        "\n".join(lines) or "No MCP servers are available to you.", {"servers": servers}
    )


def _servers(user_id: int, endpoint_id: int) -> list[dict[str, Any]]:
    from django.db.models import Count, Q

    from apps.catalog.selectors import visible_servers

    rows = (
        visible_servers(_user(user_id))
        .filter(enabled=True)
        .exclude(name=HUB_SERVER)
        .annotate(
            tools_count=Count("tools", filter=Q(tools__available=True), distinct=True),
            enabled_count=Count(
                "tools",
                filter=Q(tools__available=True, tools__endpoints__id=endpoint_id),
                distinct=True,
            ),
        )
        .order_by("name")
    )
    return [
        {
            "name": s.name,
            "description": s.description,
            "status": s.status,
            "tools": s.tools_count,
            "enabled_tools": s.enabled_count,
        }
        for s in rows
    ]


def _autonomous(servers_of: Callable[[dict[str, Any]], list[str] | None]):
    async def handler(
        user_id: int, endpoint_id: int, arguments: dict[str, Any], progress: Progress | None
    ) -> dict[str, Any]:
        wait = arguments.get("wait", True)
        if not isinstance(wait, bool):
            raise services.RunError("'wait' must be true or false.")
        run = await in_thread(_start)(user_id, endpoint_id, arguments, servers_of(arguments))
        if not wait:
            return text_result(f"Run {run.pk} started; follow it with get_run.", _summary(run))
        return await _follow(run, progress)

    return handler


def _start(
    user_id: int, endpoint_id: int, arguments: dict[str, Any], servers: list[str] | None
) -> Run:
    model = arguments.get("model") or ""
    if not isinstance(model, str):
        raise services.RunError("'model' must be a string.")
    from apps.toolsets.models import Endpoint

    endpoint = Endpoint.objects.get(pk=endpoint_id)
    return services.start_run(
        owner=_user(user_id),
        task=arguments.get("task"),
        servers=servers,
        endpoint=endpoint,
        model=model,
        max_rounds=arguments.get("max_rounds"),
    )


def _one(arguments: dict[str, Any]) -> list[str]:
    name = arguments.get("mcp_name")
    if not isinstance(name, str) or not name:
        raise services.RunError("'mcp_name' must be a server name (see list_available_mcps).")
    return [name]


def _many(arguments: dict[str, Any]) -> list[str]:
    names = arguments.get("mcp_names")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise services.RunError(
            "'mcp_names' must be a non-empty list of server names (see list_available_mcps)."
        )
    return names


# A round limit this high is a safety cap, not a plan: as a progress total (a bar at 3 of 10000)
# it would say nothing true, so the progress carries no total then.
PLANNED_ROUNDS = 1000


def _bound(run: Run, seen: int) -> tuple[float | None, str]:
    if run.max_rounds >= PLANNED_ROUNDS:
        return None, f"Round {seen}"
    return float(run.max_rounds), f"Round {seen} of at most {run.max_rounds}"


async def _follow(
    run: Run,
    progress: Progress | None,
    *,
    cancel_with_caller: bool = True,
    on_read: Callable[[Run], Awaitable[None]] | None = None,
) -> dict[str, Any]:
    """Wait for the run's end, telling the caller each round; a cancelled call cancels the run
    (unless `cancel_with_caller` is False: a task's `tasks/result` or status watcher only looks).
    `on_read` sees the run each time it is read: at the start, when it waits for an approval or
    goes on after one, and at its end (a task's status watcher).

    Woken by the run's events, not by polling the database: a step event's round is the progress
    sent, and the run is read again only at its `end` (or after FALLBACK_SECONDS without an event:
    events are best effort). A hundred callers waiting on long runs cost nothing between rounds, and
    a three-round run is read twice, where reading it after every event read it six times."""
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    channel = await layer.new_channel("runwait.")
    group = run_group(run.pk)
    await layer.group_add(group, channel)  # before the first read: nothing can slip between them
    read = in_thread(Run.objects.get)
    seen = 0
    try:
        run = await read(pk=run.pk)
        while True:
            if on_read is not None:
                await on_read(run)
            if (
                progress is not None and run.rounds > seen
            ):  # also the last rounds of a run that has ended
                seen = run.rounds
                await progress(float(seen), *_bound(run, seen))
            if run.status not in Run.ACTIVE:
                return _final(run)
            try:
                event = (await asyncio.wait_for(layer.receive(channel), FALLBACK_SECONDS)).get(
                    "event"
                ) or {}
            except TimeoutError:
                event = {"type": "end"}  # nothing heard for a while: read how it stands
            kind = event.get("type")
            if kind == "end" or (
                on_read is not None
                and (kind == "approval_required" or run.status == Run.Status.WAITING_APPROVAL)
            ):
                run = await read(pk=run.pk)
            elif kind == "step":
                run.rounds = max(run.rounds, event["seq"])
    except asyncio.CancelledError:
        if cancel_with_caller:
            await asyncio.shield(in_thread(_cancel_quietly)(run.pk))
        raise
    finally:
        await asyncio.shield(layer.group_discard(group, channel))


def _cancel_quietly(run_id: uuid.UUID) -> None:
    run = Run.objects.filter(pk=run_id).first()
    if run is not None and run.status in Run.ACTIVE:
        services.request_cancel(run=run)


def _summary(run: Run) -> dict[str, Any]:
    return {
        "run_id": str(run.pk),
        "status": run.status,
        "rounds": run.rounds,
        "max_rounds": run.max_rounds,
    }


def _final(run: Run) -> dict[str, Any]:
    if run.status == Run.Status.SUCCEEDED:
        return text_result(run.answer, _summary(run))
    if run.status == Run.Status.INCOMPLETE:  # what the model did answer, said to be partial
        return text_result(
            f"{run.answer}\n\n[The run ended incomplete after {run.rounds} rounds: {run.error}]",
            _summary(run),
            error=True,
        )
    return text_result(
        f"The run ended {run.status} after {run.rounds} rounds: {run.error}",
        _summary(run),
        error=True,
    )


def _own_run(user_id: int, arguments: dict[str, Any]) -> Run:
    run = selectors.run_for(_user(user_id), arguments.get("run_id"))
    if run is None:
        raise services.RunError(f"No run {arguments.get('run_id')!r} of yours.")
    return run


async def get_run(
    user_id: int, endpoint_id: int, arguments: dict[str, Any], progress: Progress | None
) -> dict[str, Any]:
    run = await in_thread(_own_run)(user_id, arguments)
    if run.status in Run.ACTIVE:
        return text_result(
            f"Run {run.pk} is {run.status}, after {run.rounds} rounds.", _summary(run)
        )
    result = _final(run)
    result["isError"] = False  # reading a failed run is not a failed call
    return result


async def cancel_run(
    user_id: int, endpoint_id: int, arguments: dict[str, Any], progress: Progress | None
) -> dict[str, Any]:
    def cancel() -> Run:
        return services.request_cancel(run=_own_run(user_id, arguments))

    run = await in_thread(cancel)()
    return text_result(
        f"Run {run.pk} is being cancelled."
        if run.status in Run.ACTIVE
        else f"Run {run.pk} is {run.status}.",
        _summary(run),
    )


# The servers each autonomous tool's run may use, from its arguments (None: every enabled tool).
SERVERS_OF: dict[str, Callable[[dict[str, Any]], list[str] | None]] = {
    "autonomous_with_mcp": _one,
    "autonomous_with_multiple_mcps": _many,
    "autonomous_discover_and_execute": lambda arguments: None,
}


def start_for(user_id: int, endpoint_id: int, tool: str, arguments: dict[str, Any]) -> Run:
    """The run an autonomous tool's call starts (sync; RunError on bad input, changing nothing)."""
    return _start(user_id, endpoint_id, arguments, SERVERS_OF[tool](arguments))


async def resume_run(
    user_id: int, endpoint_id: int, arguments: dict[str, Any], progress: Progress | None
) -> dict[str, Any]:
    """As the Runs page's and the REST API's Resume; then, as autonomous_*, waits for its end."""
    wait = arguments.get("wait", True)
    if not isinstance(wait, bool):
        raise services.RunError("'wait' must be true or false.")
    run = await in_thread(lambda: services.resume_run(run=_own_run(user_id, arguments)))()
    if not wait:
        return text_result(f"Run {run.pk} resumed; follow it with get_run.", _summary(run))
    return await _follow(run, progress)


HANDLERS = {
    "list_available_mcps": list_available_mcps,
    **{tool: _autonomous(servers_of) for tool, servers_of in SERVERS_OF.items()},
    "get_run": get_run,
    "cancel_run": cancel_run,
    "resume_run": resume_run,
}
