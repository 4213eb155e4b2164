"""Tool calls that may have reached their backend without a stored result: their worker was lost
between sending them and storing what came back. Work taken over (apps.chat.lease) settles them
here, the one place that decides, and never repeats a call that may change data unasked:

- a read-only tool (MCP `readOnlyHint: true`) is sent again: repeating it changes nothing;
- otherwise the endpoint's approval policy decides: where it would ask before such a call, the user
  is asked (chat and Runs pages, the REST API) whether to send it again;
- where it would not ask, the call is not sent again and the model is told its outcome is unknown.

Chat turns store a round's calls with the model's message; runs store the round as `Run.in_flight`
before a call that may change data is sent (`may_change_data`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from apps.chat import rounds
from apps.chat.tools import CallWatch, Toolbox
from apps.llm.types import ToolCall
from apps.toolsets.calls import error_result
from apps.toolsets.models import read_only

UNKNOWN = (
    "The outcome of this call is unknown: the worker running it was lost after the call was sent, "
    "and {name} is not read-only, so the hub did not send it again. Check whether it took effect "
    "before calling it again."
)
AGAIN = "this call may already have run before its worker was lost"


def may_change_data(toolbox: Toolbox | None, calls: Sequence[ToolCall]) -> bool:
    """Whether any of these calls goes to a tool not marked read-only."""
    for call in calls:
        exposed = toolbox.find(call.name) if toolbox is not None else None
        if exposed is not None and not read_only(exposed.entry.get("annotations")):
            return True
    return False


def stored_calls(round_: dict[str, Any]) -> list[ToolCall]:
    """The calls of a stored round (Run.in_flight) as the model made them."""
    extras = (round_.get("replay") or {}).get("calls") or {}
    return [
        ToolCall(
            id=c["id"],
            name=c["name"],
            arguments=c.get("arguments") or {},
            replay=extras.get(c["id"]),
        )
        for c in round_.get("calls") or []
    ]


async def settle(
    toolbox: Toolbox,
    call: ToolCall,
    *,
    approval_reason: Callable[[object], str | None],
    approve: rounds.Approve,
    on_running: Callable[[], None] | None = None,
    watch: CallWatch | None = None,
) -> tuple[dict[str, Any], float]:
    """What becomes of an unfinished call, as `rounds.call_tool` answers: (result, duration)."""
    exposed = toolbox.find(call.name)
    annotations = exposed.entry.get("annotations") if exposed is not None else None
    if exposed is None or call.arguments_error or read_only(annotations):
        # Unknown and malformed calls never reached a backend; a read-only one may be repeated.
        return await rounds.call_tool(
            toolbox,
            call,
            approval_reason=approval_reason,
            approve=approve,
            on_running=on_running,
            watch=watch,
        )
    reason = approval_reason(annotations)
    if reason is None:
        return error_result(UNKNOWN.format(name=call.name)), 0.0
    return await rounds.call_tool(
        toolbox,
        call,
        approval_reason=lambda _: f"{AGAIN}; {reason}",
        approve=approve,
        on_running=on_running,
        watch=watch,
    )
