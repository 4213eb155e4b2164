"""Bob, a user with no rights, saves catastrophic regular expressions as activation patterns on
his own endpoint and floods it with the longest queries and calls: the hub stays responsive —
alice's tool call and /health answer at once, and bob's own requests finish.

On Python's backtracking `re`, `(a|a)+$` against 26 characters froze the web process for 10 s,
each further character doubling it; the bounds below are "did not hang" bounds."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import httpx2
import pytest

from apps.accounts.services import create_access_token
from apps.toolsets.services import enable_tools, update_endpoint
from tests.live_hub import raw_session

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

HOSTILE = [
    r"(a|a)+$",
    r"((a+))+$",
    r"(?:a|a)*$",
    r"(a|aa)+$",
    r"(\w|\d)+$",
    r"a*a*a*a*a*a*a*b",
    r"(a+)+b",
    r"(.*a){12}$",
    r"^(\w+\s?)*$",
    r"(x+x+)+y",
    r"(\d|\d\d)+z",
    r"(a|a?)+$",
    r"(?:a*)*$",
    r"(?:.*,){12}P",
    r"([a-zA-Z]+)*$",
    r"(?:a|b)*(?:[^x]){10}(?:[^x]){10}q",
]
MAX_QUERY = 2000
QUERIES = [
    "a" * MAX_QUERY,
    "a" * (MAX_QUERY - 1) + "!",
    "1" * MAX_QUERY,
    "a" * 25 + "!",
    "x" * MAX_QUERY,
    ("ab" * MAX_QUERY)[:MAX_QUERY],
    ("a😀" * MAX_QUERY)[:MAX_QUERY],
    ("a," * MAX_QUERY)[:MAX_QUERY],
    ("hello world " * 200)[:MAX_QUERY],
]
BOB_AT_ONCE = 6  # bob's requests in flight at once: below the hub's slow-request slots per client
BOUND = 2.5  # seconds: ~0.3 s beside the flood on a loaded 2-core machine; the unfixed hub froze for 10 s and more


def _rpc(request_id: int, method: str, params: dict) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


@pytest.fixture
def bob_dynamic(bob, echo_server):
    endpoint = update_endpoint(endpoint=bob.endpoints.get(), mode="dynamic")
    enable_tools(endpoint=endpoint, tools=echo_server.tools.filter(name="echo"))
    return endpoint, create_access_token(user=bob, name="hostile")[1]


def _answer(response: httpx2.Response) -> dict:
    """The JSON-RPC answer, sent as JSON or as the last event of an SSE stream (a call that
    pre-loads tools notifies list_changed on its own stream first)."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    events = [
        json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")
    ]
    return next(e for e in reversed(events) if "id" in e)


async def _timed(request, slots: asyncio.Semaphore | None = None) -> tuple[float, httpx2.Response]:
    async with slots or contextlib.nullcontext():
        started = time.monotonic()
        response = await request
        return time.monotonic() - started, response


async def test_catastrophic_patterns_cannot_freeze_the_hub(
    hub, alice_endpoint, alice_hub_token, bob_dynamic
):
    endpoint, bob_token = bob_dynamic
    bob_url = hub.url(endpoint.path)
    async with httpx2.AsyncClient(timeout=30) as http:
        saved = [
            (
                await http.post(
                    hub.url(f"/api/endpoints/{endpoint.slug}/patterns/"),
                    json={"pattern": p, "targets": ["echo.add"]},
                    headers={"Authorization": f"Bearer {bob_token}"},
                )
            ).status_code
            for p in HOSTILE
        ]
        bob_headers = await raw_session(http, bob_url, bob_token)
        alice_headers = await raw_session(http, hub.url(alice_endpoint.path), alice_hub_token)
        # Both backends' connections are open before the clock runs (start-up is not the question).
        await http.post(
            hub.url(alice_endpoint.path),
            content=_rpc(1, "tools/call", {"name": "add", "arguments": {"a": 0, "b": 0}}),
            headers=alice_headers,
        )
        await http.post(
            bob_url,
            content=_rpc(1, "tools/call", {"name": "echo", "arguments": {"text": "warm"}}),
            headers=bob_headers,
        )
        searches = [
            http.post(
                bob_url,
                content=_rpc(i, "tools/call", {"name": "search_tools", "arguments": {"query": q}}),
                headers=bob_headers,
            )
            for i, q in enumerate(QUERIES * 2)
        ]
        calls = [
            http.post(
                bob_url,
                content=_rpc(100 + i, "tools/call", {"name": "echo", "arguments": {"text": q}}),
                headers=bob_headers,
            )
            for i, q in enumerate(QUERIES)
        ]
        slots = asyncio.Semaphore(BOB_AT_ONCE)
        flood = asyncio.gather(*(_timed(r, slots) for r in searches + calls))
        await asyncio.sleep(0.05)  # bob's requests are in flight
        beside = []
        for i in range(3):
            call = _rpc(200 + i, "tools/call", {"name": "add", "arguments": {"a": i, "b": 1}})
            beside.append(
                (
                    "call",
                    *(
                        await _timed(
                            http.post(
                                hub.url(alice_endpoint.path),
                                content=call,
                                headers=alice_headers,
                                timeout=20,
                            )
                        )
                    ),
                )
            )
            beside.append(("health", *(await _timed(http.get(hub.url("/health"), timeout=20)))))
        bob_done = await asyncio.wait_for(flood, 60)

    assert saved == [201] * len(HOSTILE)
    slow = [(what, round(seconds, 2)) for what, seconds, _ in beside if seconds > BOUND]
    assert not slow, f"other requests waited: {slow}"
    assert [r.status_code for _, _, r in beside] == [200] * 6
    assert [
        _answer(r)["result"]["structuredContent"]["result"]
        for what, _, r in beside
        if what == "call"
    ] == [1, 2, 3]
    assert all("result" in _answer(r) for _, r in bob_done), [
        r.text[:300] for _, r in bob_done if "result" not in _answer(r)
    ]
    assert max(seconds for seconds, _ in bob_done) < 4 * BOUND  # bob waits for his own flood only


async def test_a_matching_hostile_pattern_still_preloads(hub, bob_dynamic):
    """RE2 answers the same question Python's re would: `(a|a)+$` matches a query ending in a's."""
    endpoint, bob_token = bob_dynamic
    async with httpx2.AsyncClient(timeout=30) as http:
        await http.post(
            hub.url(f"/api/endpoints/{endpoint.slug}/patterns/"),
            json={"pattern": r"(a|a)+$", "targets": ["echo.add"]},
            headers={"Authorization": f"Bearer {bob_token}"},
        )
        headers = await raw_session(http, hub.url(endpoint.path), bob_token)
        miss = await http.post(
            hub.url(endpoint.path),
            content=_rpc(
                1, "tools/call", {"name": "search_tools", "arguments": {"query": "a" * 1999 + "!"}}
            ),
            headers=headers,
        )
        hit = await http.post(
            hub.url(endpoint.path),
            content=_rpc(
                2, "tools/call", {"name": "search_tools", "arguments": {"query": "A" * MAX_QUERY}}
            ),
            headers=headers,
        )

    assert "activated" not in _answer(miss)["result"]["structuredContent"]
    assert _answer(hit)["result"]["structuredContent"]["activated"] == {
        "loaded": ["add"],
        "unloaded": [],
    }


async def test_a_query_longer_than_the_hub_accepts_is_refused_at_once(hub, bob_dynamic):
    """search_tools runs BM25 on the event loop: a query of megabytes (the body may hold 4 MB)
    would hold it for seconds, so past MAX_QUERY characters it is invalid params."""
    endpoint, bob_token = bob_dynamic
    async with httpx2.AsyncClient(timeout=30) as http:
        headers = await raw_session(http, hub.url(endpoint.path), bob_token)
        longest = await http.post(
            hub.url(endpoint.path),
            content=_rpc(
                1, "tools/call", {"name": "search_tools", "arguments": {"query": "b" * MAX_QUERY}}
            ),
            headers=headers,
        )
        seconds, huge = await _timed(
            http.post(
                hub.url(endpoint.path),
                content=_rpc(
                    2,
                    "tools/call",
                    {"name": "search_tools", "arguments": {"query": "echo " * 600_000}},
                ),
                headers=headers,
            )
        )
        over = await http.post(
            hub.url(endpoint.path),
            content=_rpc(
                3,
                "tools/call",
                {"name": "search_tools", "arguments": {"query": "b" * (MAX_QUERY + 1)}},
            ),
            headers=headers,
        )

    assert "tools" in _answer(longest)["result"]["structuredContent"]
    assert [_answer(r)["error"]["code"] for r in (huge, over)] == [-32602, -32602]
    assert f"at most {MAX_QUERY} characters" in _answer(over)["error"]["message"]
    assert seconds < BOUND
