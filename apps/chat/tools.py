"""The endpoint's tools as the model sees them, and running one call through the pool.

Exposed names and schemas come from the same endpoint view the gateway lists (toolsets.exposure),
and calls go through the same service (toolsets.calls): the pool, the owner's credentials, the
built-in servers and the call log are the gateway's.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from apps.connections.hooks import LogFn, Relay
from apps.core import hotstate
from apps.llm.types import ToolCall, ToolSpec
from apps.toolsets import calls, naming
from apps.toolsets.events import endpoint_version_key
from apps.toolsets.exposure import EndpointView, Exposed, current

# Seconds a turn's or run's tool call waits while the hub cannot hand it to a backend.
HUB_PATIENCE = 30.0


@dataclass(frozen=True)
class CallWatch:
    """Where a call's `notifications/progress` and `notifications/message` go while it runs."""

    progress: calls.Progress
    log: LogFn


@dataclass
class Toolbox:
    user_id: int
    endpoint_id: int | None
    view: EndpointView | None

    @classmethod
    async def load(
        cls, user_id: int, endpoint_id: int | None, *, committed: bool = False
    ) -> Toolbox:
        """The endpoint's view from the same per-process, per-version cache the gateway uses.

        `committed`: the version read waits for the database (embedded) instead of taking the last
        one seen when SQLite is busy: a run started right after another process changed the
        endpoint's tools gets those tools, not the view before the change."""
        view = None
        if endpoint_id is not None:
            version = await (_committed_version if committed else _version)(endpoint_id)
            view = await current(endpoint_id, version, page_size=settings.MCPHUB_LIST_PAGE_SIZE)
        return cls(user_id, endpoint_id, view)

    @property
    def specs(self) -> list[ToolSpec]:
        if self.view is None:
            return []
        return [
            ToolSpec(
                name=t.name,
                description=t.entry.get("description") or "",
                input_schema=t.entry.get("inputSchema") or {},
            )
            for t in self.view.tools.values()
        ]

    def find(self, name: str) -> Exposed | None:
        return self.view.tools.get(name) if self.view is not None else None

    def unknown(self, name: str) -> dict[str, Any]:
        return calls.error_result(
            naming.unknown("tool", name, self.view.tools if self.view else ())[0]
        )

    async def call(
        self, exposed: Exposed, call: ToolCall, *, watch: CallWatch | None = None
    ) -> dict[str, Any]:
        """The tool's result as JSON (`isError` set on any failure); never raises but on cancel.
        `watch` gets the call's progress and log messages as they come."""
        try:
            return await calls.call_tool(
                user_id=self.user_id,
                endpoint_id=self.endpoint_id,
                view=self.view,  # type: ignore[arg-type]  # a found tool has a view
                exposed=exposed,
                arguments=call.arguments,
                progress=watch.progress if watch else None,
                relay=Relay(log=watch.log) if watch else None,
                # The hub's own hiccups (a Redis restart, no pool worker yet) are waited out, not
                # handed to the model as the tool's result.
                hub_patience=HUB_PATIENCE,
            )
        except calls.ToolError as exc:
            return calls.error_result(f"Tool {exposed.name} failed: {exc.message}")


def watch_call(call_id: str, send: Callable[[str, dict[str, Any]], Any]) -> CallWatch:
    """A call's progress and log messages as `tool_progress` and `tool_log` events of call `call_id`
    (the chat's and the runs' events: apps.chat.orchestrator, apps.chat.runs.loop)."""

    async def progress(done: float, total: float | None, message: str | None) -> None:
        event: dict[str, Any] = {"id": call_id, "progress": done}
        if total is not None:
            event["total"] = total
        if message:
            event["message"] = message
        await _maybe_await(send("tool_progress", event))

    async def log(params: dict[str, Any]) -> None:
        entry = {k: params[k] for k in ("level", "logger", "data") if k in params}
        await _maybe_await(send("tool_log", {"id": call_id, **entry}))

    return CallWatch(progress, log)


async def _maybe_await(value: Any) -> None:
    if inspect.isawaitable(value):
        await value


async def _version(endpoint_id: int) -> object:
    # The counter toolsets bumps on every change of the endpoint (the gateway reads the same key).
    client = hotstate.async_redis()
    if client is None:  # embedded: counters live in the database (hotstate.incr), not in memory
        return await hotstate.read_counter(endpoint_version_key(endpoint_id))
    return await client.get(endpoint_version_key(endpoint_id))


async def _committed_version(endpoint_id: int) -> object:
    if hotstate.async_redis() is not None:
        return await _version(endpoint_id)
    from apps.core.models import Counter
    from apps.core.threads import in_thread

    key = endpoint_version_key(endpoint_id)
    return await in_thread(
        lambda: Counter.objects.filter(key=key).values_list("value", flat=True).first()
    )()


def result_text(result: dict[str, Any], limit: int) -> str:
    """What the model is told of a result: its text, cut to `limit` characters (the rest is kept)."""
    parts = []
    for item in result.get("content") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "text":
            parts.append(str(item.get("text", "")))
        elif item.get("type") == "resource" and isinstance(item.get("resource"), dict):
            parts.append(
                str(item["resource"].get("text") or f"[resource {item['resource'].get('uri', '')}]")
            )
        else:
            parts.append(
                f"[{item.get('type', 'content')} {item.get('mimeType', '')}]".replace(" ]", "]")
            )
    if not parts and result.get("structuredContent") is not None:
        parts.append(json.dumps(result["structuredContent"]))
    text = "\n".join(parts)
    if len(text) > limit:
        text = f"{text[:limit]}\n[… cut: {len(text) - limit} more characters not shown]"
    return text
