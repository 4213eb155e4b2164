"""2,000 malformed or hostile requests get proper JSON-RPC or HTTP errors, never a 500, and change nothing."""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter

import httpx2
import pytest
from asgiref.sync import sync_to_async

from apps.accounts.models import AccessToken
from apps.catalog.models import McpServer, Tool
from apps.toolsets.models import Endpoint, EndpointTool, ToolCall
from tests.live_hub import INITIALIZE

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

JSONRPC_ERRORS = {-32700, -32600, -32601, -32602, -32603, -32001, -32002}


def _bodies(rng: random.Random) -> list[tuple[str, bytes, dict[str, str]]]:
    """(kind, body, extra headers): every kind of nonsense a client or attacker might send."""
    valid = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    shapes = [
        {},
        [],
        [valid, valid],
        "string",
        42,
        None,
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"},
        {"jsonrpc": "2.0", "id": True, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": 7},
        {"jsonrpc": "2.0", "id": 1, "method": ""},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1, 2]},
        {"jsonrpc": "2.0", "id": 1},
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {}},
    ]
    bad_params = [
        ("tools/call", {"name": 5}),
        ("tools/call", {"name": "add", "arguments": [1]}),
        ("tools/call", {}),
        ("tools/call", {"name": "no_such_tool"}),
        ("tools/call", {"name": "a" * 10000}),
        ("tools/list", {"cursor": "!!!"}),
        ("tools/list", {"cursor": "OTk5OTk5"}),
        ("resources/read", {}),
        ("resources/read", {"uri": "file:///etc/passwd"}),
        ("prompts/get", {"name": None}),
        ("completion/complete", {"ref": {"type": "ref/evil"}}),
        ("logging/setLevel", {"level": "loud"}),
        ("no/such/method", {}),
        ("initialize", "not-an-object"),
    ]
    cases = []
    for i in range(2000):
        pick = i % 8
        if pick == 0:
            cases.append(
                ("bad-json", bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 64))), {})
            )
        elif pick == 1:
            cases.append(("truncated", json.dumps(valid).encode()[: rng.randint(1, 30)], {}))
        elif pick == 2:
            cases.append(("shape", json.dumps(rng.choice(shapes)).encode(), {}))
        elif pick == 3:
            method, params = rng.choice(bad_params)
            cases.append(
                (
                    "params",
                    json.dumps(
                        {"jsonrpc": "2.0", "id": i, "method": method, "params": params}
                    ).encode(),
                    {"Mcp-Session-Id": "VALID"},
                )
            )
        elif pick == 4:
            cases.append(
                (
                    "session",
                    json.dumps(valid).encode(),
                    {"Mcp-Session-Id": rng.choice(["nope", "../../x", "x" * 500, ""])},
                )
            )
        elif pick == 5:
            cases.append(("no-session", json.dumps(valid).encode(), {"Mcp-Session-Id": ""}))
        elif pick == 6:
            cases.append(
                (
                    "media",
                    json.dumps(valid).encode(),
                    rng.choice([{"Content-Type": "text/plain"}, {"Accept": "text/html"}]),
                )
            )
        else:
            version = rng.choice(["1999-01-01", "x", "2026-07-28"])
            cases.append(
                (
                    "version",
                    json.dumps(valid).encode(),
                    {"MCP-Protocol-Version": version, "Mcp-Session-Id": "VALID"},
                )
            )
    cases.append(
        (
            "huge",
            b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'
            + b"a" * (5 * 1024 * 1024)
            + b'"}}',
            {},
        )
    )
    return cases


def _snapshot(endpoint) -> tuple:
    # Call-log rows of this endpoint only: an earlier test's buffered rows may land meanwhile.
    return (
        McpServer.objects.count(),
        list(McpServer.objects.values_list("config_hash", flat=True)),
        Tool.objects.count(),
        Endpoint.objects.count(),
        EndpointTool.objects.count(),
        AccessToken.objects.count(),
        ToolCall.objects.filter(endpoint=endpoint).count(),
    )


async def test_hostile_requests_get_clean_errors_and_change_nothing(
    hub, alice_endpoint, alice_hub_token
):
    before = await sync_to_async(_snapshot)(alice_endpoint)
    url = hub.url(alice_endpoint.path)
    base_headers = {
        "Authorization": f"Bearer {alice_hub_token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    cases = _bodies(random.Random(20261122))
    statuses: dict[int, int] = {}
    codes: Counter[int] = Counter()
    limit = asyncio.Semaphore(8)

    async def send(http: httpx2.AsyncClient, kind: str, body: bytes, extra: dict[str, str]) -> None:
        headers = {**base_headers, **extra}
        if extra.get("Mcp-Session-Id") == "VALID":
            headers["Mcp-Session-Id"] = session
        if extra.get("Mcp-Session-Id") == "":
            headers.pop("Mcp-Session-Id")
        async with limit:
            response = await http.post(url, content=body, headers=headers)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        assert response.status_code < 500, (
            kind,
            body[:80],
            response.status_code,
            response.text[:200],
        )
        if response.status_code in (200, 400, 404) and response.headers.get(
            "content-type", ""
        ).startswith("application/json"):
            payload = response.json()
            if "error" in payload and isinstance(payload["error"], dict):
                assert payload["error"]["code"] in JSONRPC_ERRORS, (kind, payload)
                codes[payload["error"]["code"]] += 1
                assert payload.get("jsonrpc") == "2.0"

    async with httpx2.AsyncClient(timeout=60) as http:
        session = (
            await http.post(url, headers=base_headers, content=json.dumps(INITIALIZE))
        ).headers["mcp-session-id"]
        await asyncio.gather(*(send(http, *case) for case in cases))
        healthy = await http.post(url, headers=base_headers, content=json.dumps(INITIALIZE))

    assert sum(statuses.values()) == len(cases) >= 2001
    assert (
        413 in statuses
        and 415 in statuses
        and 406 in statuses
        and 400 in statuses
        and 404 in statuses
    )
    assert codes[-32602] and codes[-32601] and codes[-32700] and codes[-32600]
    assert healthy.status_code == 200
    assert await sync_to_async(_snapshot)(alice_endpoint) == before
