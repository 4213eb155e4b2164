"""Whatever a client sends to an MCP endpoint, the answer is a 4xx or a JSON-RPC error other than
-32603 (internal error): never an HTTP 5xx. Named hostile inputs first, then a hypothesis fuzzer
over message shapes, params of every method, ids, headers and raw bytes; in-process, so it is fast.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.accounts.models import TokenScope
from apps.accounts.services import create_access_token
from apps.gateway import auth
from apps.gateway.protocol import HANDLERS
from apps.gateway.transport import Gateway
from tests.gateway.asgi import Reply, call
from tests.live_hub import INITIALIZE

pytestmark = pytest.mark.django_db(transaction=True)

MODERN = "2026-07-28"


class Client:
    """alice's endpoint through the in-process gateway, on one event loop for the whole test."""

    def __init__(self, loop: asyncio.AbstractEventLoop, path: str, token: str) -> None:
        self.loop, self.path, self.token, self.app = loop, path, token, Gateway()
        self.session = ""

    def post(
        self, body: bytes, headers: dict[str, str] | None = None, *, path: str | None = None
    ) -> Reply:
        all_headers = {"authorization": f"Bearer {self.token}", **(headers or {})}
        return self.loop.run_until_complete(
            call(self.app, path or self.path, body, headers=all_headers)
        )

    def in_session(self, body: bytes) -> Reply:
        return self.post(body, {"mcp-session-id": self.session})

    def stateless(self, body: bytes) -> Reply:
        return self.post(body, {"mcp-protocol-version": MODERN})


@pytest.fixture
def mcp(alice) -> Iterator[Client]:
    auth.clear_caches()
    loop = asyncio.new_event_loop()
    client = Client(
        loop, alice.endpoints.get().path, create_access_token(user=alice, name="fuzz")[1]
    )
    initialized = client.post(json.dumps(INITIALIZE).encode())
    assert initialized.status == 200, initialized.body
    client.session = initialized.headers["mcp-session-id"]
    yield client
    loop.run_until_complete(asyncio.sleep(0))
    loop.close()


def assert_handled(reply: Reply, what: object) -> None:
    assert reply.status < 500, (what, reply.status, reply.body[:300])
    assert reply.rpc_error_code != -32603, (what, reply.body[:300])


def request(method: str, params: object, request_id: object = 1) -> bytes:
    # ensure_ascii keeps lone surrogates as \uXXXX escapes: valid JSON text carrying invalid Unicode.
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    ).encode()


HOSTILE = {
    "nested 1,000 deep": b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":'
    + b'{"a":' * 1000
    + b"1"
    + b"}" * 1000
    + b"}}",
    "nested 100,000 deep": b"[" * 100_000 + b"]" * 100_000,
    "nested 150 deep": request(
        "tools/call", {"name": "x", "arguments": json.loads("[" * 150 + "]" * 150)}
    ),
    "lone surrogate in a tool name": request("tools/call", {"name": "\ud800"}),
    "lone surrogate in arguments": request(
        "tools/call", {"name": "x", "arguments": {"q": "a\udfff"}}
    ),
    "lone surrogate as a key": request("tools/call", {"name": "x", "arguments": {"\ud83d": 1}}),
    "lone surrogate in the method": request("tools/\udc00", {}),
    "lone surrogate in the id": request("ping", {}, "\ud800"),
    "surrogate as raw bytes": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\xed\xa0\x80"}}',
    "completion argument a string": request(
        "completion/complete", {"ref": {"type": "ref/prompt", "name": "p"}, "argument": "x"}
    ),
    "completion argument without value": request(
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a"}},
    ),
    "completion argument value a number": request(
        "completion/complete",
        {"ref": {"type": "ref/resource", "uri": "x"}, "argument": {"name": "a", "value": 1}},
    ),
    "completion context arguments nested": request(
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "p"},
            "argument": {"name": "a", "value": "b"},
            "context": {"arguments": {"a": {}}},
        },
    ),
    "protocol version an object": request(
        "initialize", {"protocolVersion": {"a": 1}, "capabilities": []}
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_inputs_get_a_clear_error_in_a_session_and_stateless(mcp, name):
    for send in (mcp.in_session, mcp.stateless):
        reply = send(HOSTILE[name])
        assert_handled(reply, name)
        if name != "protocol version an object":  # that one is negotiated to ours, as the spec says
            assert reply.status >= 400 or reply.rpc_error_code is not None, (name, reply.body[:200])


def test_depth_and_surrogates_are_parse_errors_and_completion_shapes_invalid_params(mcp):
    assert mcp.in_session(HOSTILE["nested 1,000 deep"]).rpc_error_code == -32700
    assert mcp.in_session(HOSTILE["nested 150 deep"]).rpc_error_code == -32700
    assert mcp.in_session(HOSTILE["lone surrogate in arguments"]).rpc_error_code == -32700
    assert mcp.in_session(HOSTILE["completion argument without value"]).rpc_error_code == -32602
    # a surrogate *pair* is a real character and passes
    emoji = mcp.in_session(request("tools/call", {"name": "\U0001f600"}))
    assert emoji.rpc_error_code == -32602 and "Unknown tool" in emoji.json()["error"]["message"]


def test_api_tokens_are_refused_on_mcp_endpoints(mcp, alice):
    _, api = create_access_token(user=alice, scope=TokenScope.API_WRITE)

    reply = mcp.loop.run_until_complete(
        call(
            mcp.app,
            mcp.path,
            json.dumps(INITIALIZE).encode(),
            headers={"authorization": f"Bearer {api}"},
        )
    )

    assert reply.status == 403
    assert "insufficient_scope" in reply.headers["www-authenticate"]


def test_an_mcp_token_works_only_on_the_endpoint_it_names(mcp, alice):
    from apps.toolsets.services import create_endpoint

    other = create_endpoint(owner=alice, name="Second")
    _, scoped = create_access_token(user=alice, endpoint=alice.endpoints.get(is_default=True))
    body = json.dumps(INITIALIZE).encode()

    def status(path: str, **headers: str) -> int:
        return mcp.loop.run_until_complete(call(mcp.app, path, body, headers=headers)).status

    assert status(mcp.path, authorization=f"Bearer {scoped}") == 200
    assert status(f"/mcp/t/{scoped}/") == 200
    assert status(other.path, authorization=f"Bearer {scoped}") == 404


# -- the fuzzer ----------------------------------------------------------------------

lone_surrogates = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "x\ud83d"])
texts = st.one_of(
    st.text(max_size=20),
    lone_surrogates,
    st.sampled_from(["", "a" * 300, "../../etc", "ref/prompt", "ref/resource"]),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    texts,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)
PARAM_KEYS = [
    "name",
    "arguments",
    "uri",
    "cursor",
    "ref",
    "argument",
    "context",
    "level",
    "_meta",
    "protocolVersion",
    "capabilities",
    "clientInfo",
    "requestId",
    "type",
    "value",
    "notifications",
]
params = st.one_of(
    st.dictionaries(st.sampled_from(PARAM_KEYS) | texts, json_values, max_size=5),
    st.fixed_dictionaries(
        {},
        optional={
            "ref": st.fixed_dictionaries(
                {"type": st.sampled_from(["ref/prompt", "ref/resource"]) | texts},
                optional={"name": json_values, "uri": json_values},
            ),
            "argument": st.fixed_dictionaries(
                {}, optional={"name": json_values, "value": json_values}
            )
            | json_values,
            "context": st.fixed_dictionaries({}, optional={"arguments": json_values}),
            "name": json_values,
            "arguments": json_values,
            "cursor": json_values,
            "level": json_values,
            "uri": json_values,
            "_meta": st.fixed_dictionaries({}, optional={"progressToken": json_values}),
        },
    ),
    json_values,
)
methods = (
    st.sampled_from(
        [
            *HANDLERS,
            "initialize",
            "notifications/cancelled",
            "notifications/initialized",
            "subscriptions/listen",
        ]
    )
    | texts
)
ids = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    texts,
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False),
)
messages = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "2.0", "1.0"]) | json_values},
    optional={
        "id": ids,
        "method": methods,
        "params": params,
        "result": json_values,
        "error": json_values,
    },
)
# Mostly well-formed requests, so the fuzzer reaches every method's params handling.
requests = st.fixed_dictionaries(
    {
        "jsonrpc": st.just("2.0"),
        "id": st.integers(min_value=0, max_value=2**40) | texts,
        "method": st.sampled_from([*HANDLERS, "initialize"]),
        "params": params.filter(lambda p: isinstance(p, dict)),
    }
)
bodies = st.one_of(
    requests.map(lambda m: json.dumps(m).encode()),
    requests.map(lambda m: json.dumps(m).encode()),
    messages.map(lambda m: json.dumps(m).encode()),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=64),
    messages.map(lambda m: json.dumps(m).encode()[: len(json.dumps(m)) // 2]),
)
shapes = st.sampled_from(["session", "stateless", "no-session", "bad-session"])


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(body=bodies, shape=shapes)
def test_fuzzed_mcp_requests_never_get_a_5xx_or_an_internal_error(mcp, body, shape):
    headers = {
        "session": {"mcp-session-id": mcp.session},
        "stateless": {"mcp-protocol-version": MODERN},
        "no-session": {},
        "bad-session": {"mcp-session-id": "nope"},
    }[shape]

    assert_handled(mcp.post(body, headers), (shape, body[:300]))


def test_the_mcp_endpoint_matrix(mcp, alice, bob, charlie, dave):
    """alice's endpoint by header and in the URL, for every persona and kind of token."""
    endpoint = alice.endpoints.get(is_default=True)
    tokens = {
        "alice": create_access_token(user=alice)[1],
        "alice_mcp": create_access_token(user=alice, endpoint=endpoint)[1],
        "alice_read": create_access_token(user=alice, scope=TokenScope.API_READ)[1],
        "alice_write": create_access_token(user=alice, scope=TokenScope.API_WRITE)[1],
        "bob": create_access_token(user=bob)[1],
        "charlie": create_access_token(user=charlie)[1],
        "dave": create_access_token(user=dave)[1],
        "dave_mcp": create_access_token(user=dave, endpoint=dave.endpoints.get())[1],
    }
    expected_by_header = {
        "alice": 200,
        "alice_mcp": 200,
        "alice_read": 403,
        "alice_write": 403,
        "bob": 404,
        "charlie": 404,
        "dave": 404,
        "dave_mcp": 404,
    }
    expected_in_url = {
        "alice_mcp": 200,
        "dave_mcp": 200,
        "alice": 401,
        "alice_read": 403,
        "alice_write": 403,
        "bob": 401,
        "charlie": 401,
        "dave": 401,
    }
    body = json.dumps(INITIALIZE).encode()

    def status(path: str, **headers: str) -> int:
        return mcp.loop.run_until_complete(call(mcp.app, path, body, headers=headers)).status

    by_header = {
        who: status(endpoint.path, authorization=f"Bearer {raw}") for who, raw in tokens.items()
    }
    in_url = {who: status(f"/mcp/t/{raw}/") for who, raw in tokens.items()}

    assert by_header == expected_by_header
    assert in_url == expected_in_url  # dave's URL token opens dave's endpoint, never alice's
    assert status(endpoint.path) == 401
