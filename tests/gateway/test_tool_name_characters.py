"""A tool name no tool can carry (a NUL, another control character) is
invalid params (-32602) before any lookup: Postgres refuses NUL in text, and it must never
reach the database as an internal error (-32603) — in static and dynamic mode alike."""

from __future__ import annotations

import json

import httpx2
import pytest
from asgiref.sync import sync_to_async

from apps.toolsets.services import update_endpoint
from tests.live_hub import raw_session

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

# Written as JSON escapes, the way a client's bytes carry them.
NAMES = [
    '"add\\u0000"',
    '"\\u0000"',
    '"echo__add\\u0000x"',
    '"echo.add\\u0007"',
    '"a\\u001bb"',
    '"x\\u0085y"',
]


async def _calls(url: str, token: str, method: str, params: list[str]) -> list[dict]:
    async with httpx2.AsyncClient(timeout=30) as http:
        headers = await raw_session(http, url, token)
        replies = []
        for i, name in enumerate(params):
            body = f'{{"jsonrpc": "2.0", "id": {i + 1}, "method": "{method}", "params": {name}}}'
            replies.append((await http.post(url, content=body, headers=headers)).json())
        fine = await http.post(
            url,
            content=json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 99,
                    "method": "tools/call",
                    "params": {"name": "add", "arguments": {"a": 2, "b": 3}},
                }
            ),
            headers=headers,
        )
    return [*replies, fine.json()]


@pytest.mark.parametrize("mode", ["static", "dynamic"])
async def test_a_tool_name_with_a_nul_or_control_character_is_invalid_params(
    hub, alice_endpoint, alice_hub_token, mode
):
    if mode == "dynamic":
        await sync_to_async(update_endpoint)(endpoint=alice_endpoint, mode="dynamic")
    params = [f'{{"name": {name}, "arguments": {{}}}}' for name in NAMES]

    *replies, fine = await _calls(
        hub.url(alice_endpoint.path), alice_hub_token, "tools/call", params
    )

    assert [r["error"]["code"] for r in replies] == [-32602] * len(NAMES), replies
    assert all("control character" in r["error"]["message"] for r in replies)
    assert fine["result"]["structuredContent"]["result"] == 5  # the session goes on


async def test_call_tool_and_prompts_get_refuse_such_names_too(
    hub, alice_endpoint, alice_hub_token
):
    await sync_to_async(update_endpoint)(endpoint=alice_endpoint, mode="dynamic")
    url = hub.url(alice_endpoint.path)
    through_call_tool = [
        f'{{"name": "call_tool", "arguments": {{"name": {name}}}}}' for name in NAMES[:2]
    ]
    prompts = [f'{{"name": {name}}}' for name in NAMES[:2]]

    *called, _ = await _calls(url, alice_hub_token, "tools/call", through_call_tool)
    *prompted, _ = await _calls(url, alice_hub_token, "prompts/get", prompts)

    assert [r["error"]["code"] for r in called + prompted] == [-32602] * 4, called + prompted
