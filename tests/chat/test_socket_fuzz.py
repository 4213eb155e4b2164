"""Whatever a client sends on the chat and run sockets — random JSON, text that is not JSON, binary
frames, oversized messages, every client type with wrong-typed payloads — with whichever credential,
the socket answers with `error` events (or its replay) and stays up: no consumer crashes. A
read-only (`api_read`) socket is told `forbidden` for every action and starts nothing, even on a
conversation whose provider would take a turn. In-process, through the hub's WebSocket stack
(Channels' communicator), so hypothesis can send thousands of frames."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.accounts.services import create_access_token
from apps.chat import records as chat_records
from apps.chat.models import Conversation, Event, Message, Turn
from apps.chat.runs.models import Run, RunStep
from apps.llm.models import Provider
from tests.chat.runs.test_socket import APP, _close_socket_db_connections  # noqa: F401 - its fixture closes the sockets' connections
from tests.chat.test_approval_and_errors import _session_cookie

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]

WAIT = 10.0
ACTIONS = ("message", "stop", "approve")
KINDS = (*ACTIONS, "resume", "cancel", "dance", "", "MESSAGE")
PROBE = json.dumps(
    {"type": "__probe__"}
)  # its error marks the end of the answers to the frame before it

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=40)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
payloads = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "text": json_values,
            "call_id": json_values,
            "allow": json_values,
            "after": json_values | st.integers(-5, 10**20),
        },
    ),
)
messages = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(KINDS) | json_values}, optional={"payload": payloads}
    ),
    json_values,
).map(json.dumps)
oversized = st.builds(
    lambda kind, size: json.dumps(
        {"type": kind, "payload": {"text": "x" * size, "after": 0, "call_id": "c" * size}}
    ),
    st.sampled_from(KINDS),
    st.integers(100_001, 1_200_000),
)
frames = st.one_of(
    messages.map(lambda text: ("text", text)),
    st.text(max_size=200).filter(lambda text: text != PROBE).map(lambda text: ("text", text)),
    st.binary(max_size=200).map(lambda data: ("bytes", data)),
    oversized.map(lambda text: ("text", text)),
)


class Socket:
    """One socket on the test's loop; `answers(frame)` is everything it sent back for that frame."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, path: str, headers: list[tuple[bytes, bytes]]
    ) -> None:
        self.loop, self.path, self.headers = loop, path, headers
        self.socket: WebsocketCommunicator | None = None

    def connect(self) -> tuple[bool, Any]:
        self.close()

        async def go() -> tuple[bool, Any]:
            self.socket = WebsocketCommunicator(APP, self.path, headers=self.headers)
            return await self.socket.connect(timeout=WAIT)

        return self.loop.run_until_complete(go())

    def answers(self, kind: str, data: str | bytes) -> list[dict[str, Any]] | None:
        """What the socket answered, in order; None when it closed (cleanly: a crash raises here)."""
        return self.loop.run_until_complete(self._answers(kind, data))

    async def _answers(self, kind: str, data: str | bytes) -> list[dict[str, Any]] | None:
        assert self.socket is not None
        await self.socket.send_input(
            {"type": "websocket.receive", kind: data}
        )  # empty frames too (send_to refuses them)
        await self.socket.send_to(text_data=PROBE)
        answers = []
        while True:
            output = await self.socket.receive_output(timeout=WAIT)
            if output["type"] == "websocket.close":
                return None
            event = json.loads(output["text"])
            if event["type"] == "error" and "'__probe__'" in event["payload"]["message"]:
                return answers
            answers.append(event)

    def close(self) -> None:
        if self.socket is not None:
            self.loop.run_until_complete(self.socket.disconnect())
            self.socket = None


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture
def followed(alice) -> tuple[Conversation, Run]:
    """Alice's conversation with a provider (a message would start a turn) and stored events, and a run."""
    provider = Provider.objects.create(
        name="unreachable",
        kind="openai",
        base_url="http://127.0.0.1:9/v1",
        default_model="m",
        owner=alice,
        is_default=True,
    )
    conversation = Conversation.objects.create(
        owner=alice, provider=provider, endpoint=alice.endpoints.get()
    )
    chat_records.save_events(
        conversation.pk, [{"seq": 1, "type": "user_message", "payload": {"text": "hello"}}]
    )
    run = Run.objects.create(
        owner=alice, task="Count", status=Run.Status.SUCCEEDED, answer="3", rounds=1
    )
    RunStep.objects.create(run=run, round=1, text="one", tool_calls=[])
    return conversation, run


def credential(alice, kind: str) -> list[tuple[bytes, bytes]]:
    if kind == "session":
        return [
            (b"cookie", _session_cookie(alice).encode()),
            (b"origin", b"http://testserver"),
            (b"host", b"testserver"),
        ]
    fields = {"endpoint": alice.endpoints.get()} if kind == "mcp_endpoint" else {"scope": kind}
    return [
        (
            b"authorization",
            f"Bearer {create_access_token(user=alice, name=kind, **fields)[1]}".encode(),
        )
    ]


def state(conversation: Conversation, run: Run) -> tuple[Any, ...]:
    conversation.refresh_from_db()
    run.refresh_from_db()
    return (
        Turn.objects.count(),
        Message.objects.count(),
        Event.objects.count(),
        conversation.title,
        run.status,
        run.rounds,
        run.pending_approvals,
        RunStep.objects.count(),
    )


def fuzz(socket: Socket, *, forbidden: tuple[str, ...], examples: int) -> list[str]:
    """Problems seen over `examples` frames; each `forbidden` client type must get a `forbidden` error."""
    problems: list[str] = []

    @given(frame=frames)
    @settings(
        max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    def one(frame: tuple[str, str | bytes]) -> None:
        kind, data = frame
        answers = socket.answers(kind, data)
        if answers is None:
            problems.append(f"closed on {data[:80]!r}")
            assert socket.connect()[0]
            return
        errors = [a for a in answers if a["type"] == "error" and a["seq"] is None]
        if any(a["type"] != "error" and a["seq"] is None for a in answers) or len(errors) > 1:
            problems.append(f"{data[:80]!r} -> {answers[:3]}")
        sent = _parsed(data)
        told = [e["payload"]["code"] for e in errors]
        if isinstance(sent, dict) and sent.get("type") in forbidden and told != ["forbidden"]:
            problems.append(f"read-only {sent.get('type')} -> {answers[:3]}")

    one()
    return problems


def _parsed(data: str | bytes) -> Any:
    try:
        return json.loads(data) if isinstance(data, str) else None
    except ValueError:
        return None


@pytest.mark.parametrize("kind", ["api_read", "api_write", "full", "session"])
def test_no_frame_crashes_a_socket_and_a_read_only_one_starts_nothing(alice, followed, loop, kind):
    conversation, run = followed
    if (
        kind != "api_read"
    ):  # a writer's well-formed message would start a turn: no provider, no turn
        Conversation.objects.filter(pk=conversation.pk).update(provider=None)
    before = state(conversation, run)
    headers = credential(alice, kind)
    problems = []
    # The run socket only follows (runs are acted on through the REST API): its actions are unknown types.
    forbidden = {
        f"/ws/chat/{conversation.pk}/": ACTIONS if kind == "api_read" else (),
        f"/ws/runs/{run.pk}/": (),
    }
    for path, refused in forbidden.items():
        socket = Socket(loop, path, headers)
        try:
            assert socket.connect()[0]
            problems += fuzz(socket, forbidden=refused, examples=150)
        finally:
            socket.close()

    assert problems == []
    if kind == "api_read":
        assert (
            state(conversation, run) == before
        )  # no turn, no message, no event, the run untouched


@pytest.mark.parametrize("kind", ["mcp", "mcp_endpoint"])
def test_tokens_that_may_not_read_never_get_a_socket_to_fuzz(alice, followed, loop, kind):
    conversation, run = followed
    for path in (f"/ws/chat/{conversation.pk}/", f"/ws/runs/{run.pk}/"):
        socket = Socket(loop, path, credential(alice, kind))
        try:
            assert socket.connect() == (False, 4403)
        finally:
            socket.close()
