"""Every OpenAI-compatible server flavour (tests/llm_server.py FLAVOURS) drives a two-tool chat turn
and a run through the real hub: errors read right, cold starts waited out (and said), tool calls
whole however the server streams them, servers that do not stream asked whole."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.chat.conftest import Api, chat_socket
from tests.chat.runs.conftest import start_run, wait_run
from tests.llm_server import Reply, ScriptedLLM

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

TOOLS = Reply(
    text=["Let me ", "check"],
    tool_calls=[("c1", "echo", {"text": "héllo ☃"}), ("c2", "add", {"a": 2, "b": 3})],
)
ANSWER = Reply(text=["Echo said héllo ", "and 2+3=5"])

# flavour -> (what the server says before it answers, what the page shows meanwhile)
CASES = {
    "gemini": (
        [
            Reply(
                error=429,
                retry_after=0,
                error_message="You exceeded your current quota, please check "
                "your plan and billing details.",
            )
        ],
        None,
    ),  # a per-minute limit, with Google's RetryInfo
    "tgi": ([], None),
    "ollama": ([Reply(loading=True)], "The provider is busy"),
    "vllm": ([], None),
    "lmstudio": ([Reply(loading=True)], "The model is loading"),
    "llamacpp": ([Reply(loading=True), Reply(loading=True)], "The model is loading"),
    "nostream": ([], None),
    "json-only": ([], None),
}


@pytest.fixture(params=sorted(CASES))
def llm(request) -> Iterator[ScriptedLLM]:
    """Overrides the chat tests' scripted LLM (alice_provider points at this one)."""
    with ScriptedLLM(flavour=request.param) as server:
        yield server


async def test_a_two_tool_turn(hub, llm, alice_provider, alice_endpoint, alice_hub_token):
    before, status = CASES[llm.flavour]
    llm.script([*before, TOOLS, ANSWER])
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "Use the tools"})
            end = await chat.until("end")

    assert end["payload"]["status"] == "complete", chat.of("error")
    assert chat.text() == "Let me checkEcho said héllo and 2+3=5"
    assert [c["payload"]["name"] for c in chat.of("tool_call")] == ["echo", "add"]
    assert [c["payload"]["arguments"] for c in chat.of("tool_call")] == [
        {"text": "héllo ☃"},
        {"a": 2, "b": 3},
    ]
    results = {r["payload"]["name"]: r["payload"] for r in chat.of("tool_result")}
    assert (
        results["echo"]["content"][0]["text"] == "héllo ☃"
        and results["add"]["content"][0]["text"] == "5"
    )
    # The results went back to the model, answering the calls by the ids they were given.
    tool_messages = [m for m in llm.requests[-1]["messages"] if m["role"] == "tool"]
    call_ids = [c["payload"]["id"] for c in chat.of("tool_call")]
    assert [(m["tool_call_id"], m["content"]) for m in tool_messages] == list(
        zip(call_ids, ["héllo ☃", "5"])
    )
    if status:
        said = [s["payload"]["message"] for s in chat.of("status")]
        assert sum(message.startswith(status) for message in said) == len(before)
        # Then, once the model answers, the status line is cleared.
        assert said[said.index(next(m for m in said if m.startswith(status))) + len(before)] == ""


async def test_a_two_tool_run(hub, llm, alice_provider, alice_endpoint, alice_hub_token):
    before, _ = CASES[llm.flavour]
    llm.script([*before, TOOLS, ANSWER])
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Use echo and add", servers=["echo"])
        done = await wait_run(api, run["id"])

    assert done["status"] == "succeeded", done["error"]
    assert done["answer"] == "Echo said héllo and 2+3=5"
    calls = done["steps"][0]["tool_calls"]
    assert [(c["name"], c["arguments"], c["result"]["content"][0]["text"]) for c in calls] == [
        ("echo", {"text": "héllo ☃"}, "héllo ☃"),
        ("add", {"a": 2, "b": 3}, "5"),
    ]
    assert llm.pending == 0
