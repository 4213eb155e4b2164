"""Which LLM tool calls wait for the user, and why, follow MCP's annotation defaults: a tool may
change data unless its server marks it `readOnlyHint: true`, and one that may change data is
destructive unless marked `destructiveHint: false`."""

from __future__ import annotations

import pytest

from apps.toolsets.models import EVERY_CALL, MARKED_DESTRUCTIVE, NOT_READ_ONLY, Endpoint

UNMARKED = [
    None,
    {},
    {"title": "Drop all"},
    {"readOnlyHint": False},
    {"destructiveHint": None},
    "garbage",
    [True],
]
HINTS = [
    *[(annotations, NOT_READ_ONLY) for annotations in UNMARKED],
    ({"destructiveHint": True}, MARKED_DESTRUCTIVE),
    ({"readOnlyHint": False, "destructiveHint": True}, MARKED_DESTRUCTIVE),
    ({"readOnlyHint": True}, None),
    (
        {"readOnlyHint": True, "destructiveHint": True},
        None,
    ),  # destructiveHint means nothing for a read-only tool
    ({"destructiveHint": False}, None),
    ({"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True}, None),
    # Only JSON booleans are marks: a server's "true" string or 1 does not make a tool read-only.
    ({"readOnlyHint": "true"}, NOT_READ_ONLY),
    ({"readOnlyHint": 1}, NOT_READ_ONLY),
    ({"destructiveHint": 0}, NOT_READ_ONLY),
    ({"destructiveHint": "yes"}, NOT_READ_ONLY),
]


@pytest.mark.parametrize("annotations, reason", HINTS)
def test_the_default_mode_asks_for_every_tool_not_marked_safe(annotations, reason):
    assert Endpoint().approval == Endpoint.Approval.DESTRUCTIVE  # the default setting
    assert Endpoint(approval="destructive").approval_reason(annotations) == reason


@pytest.mark.parametrize("annotations, reason", HINTS)
def test_every_call_mode_says_the_tools_own_reason_first(annotations, reason):
    assert Endpoint(approval="all").approval_reason(annotations) == (reason or EVERY_CALL)


@pytest.mark.parametrize("annotations, reason", HINTS)
def test_approval_off_never_asks(annotations, reason):
    assert Endpoint(approval="off").approval_reason(annotations) is None
