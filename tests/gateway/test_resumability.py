"""A client's SSE stream drops mid-call; it resumes with Last-Event-ID and loses no event."""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest

from tests.live_hub import raw_session, sse_messages

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]


def _ask(request_id: int) -> dict:
    """A call of the echo server's `ask`: it asks the client's model (sampling) before answering."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "ask", "arguments": {"question": "still there?"}},
    }


def _yes(sampling: dict) -> dict:
    """The client's model answering the hub's sampling request "yes"."""
    return {
        "jsonrpc": "2.0",
        "id": sampling["id"],
        "result": {"role": "assistant", "content": {"type": "text", "text": "yes"}, "model": "m"},
    }


async def test_a_dropped_stream_is_replayed_from_the_last_event_seen(
    hub, alice_endpoint, alice_hub_token
):
    url = hub.url(alice_endpoint.path)
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "progress",
            "arguments": {"steps": 200},
            "_meta": {"progressToken": "p"},
        },
    }
    first, rest = [], []
    async with httpx2.AsyncClient(timeout=30) as http:
        headers = await raw_session(http, url, alice_hub_token)
        async with http.stream("POST", url, content=json.dumps(call), headers=headers) as response:
            async for event_id, message in sse_messages(response):
                first.append((event_id, message))
                if len(first) == 3:
                    break  # the connection drops here; more events may be in flight, never read
        resume = {**headers, "Last-Event-ID": first[-1][0]}
        async with http.stream("GET", url, headers=resume) as response:
            async for event_id, message in sse_messages(response):
                rest.append((event_id, message))

    messages = [m for _, m in first + rest]
    steps = [
        m["params"]["progress"] for m in messages if m.get("method") == "notifications/progress"
    ]
    assert steps == list(range(1, 201))
    assert messages[-1]["id"] == 7 and messages[-1]["result"]["content"][0]["text"] == "progressed"
    assert all(event_id for event_id, _ in first + rest)
    assert len({event_id for event_id, _ in first + rest}) == len(first + rest)


async def test_a_call_goes_on_after_its_stream_drops_and_its_answer_reaches_the_resumed_stream(
    hub, alice_endpoint, alice_hub_token
):
    url = hub.url(alice_endpoint.path)
    call = _ask(8)
    async with httpx2.AsyncClient(timeout=30) as http:
        headers = await raw_session(http, url, alice_hub_token, capabilities={"sampling": {}})
        async with http.stream("POST", url, content=json.dumps(call), headers=headers) as response:
            async for sampling_event_id, sampling in sse_messages(response):  # noqa: B007 - read after it
                break  # the hub asks our model; the connection drops before we answer
        assert sampling["method"] == "sampling/createMessage"
        answer = _yes(sampling)
        resumed = []
        async with http.stream(
            "GET", url, headers={**headers, "Last-Event-ID": sampling_event_id}
        ) as response:
            posted = await http.post(url, content=json.dumps(answer), headers=headers)
            async for _, message in sse_messages(response):
                resumed.append(message)

    assert posted.status_code == 202, resumed
    assert "result" in resumed[0], resumed
    assert resumed == [{"jsonrpc": "2.0", "id": 8, "result": resumed[0]["result"]}]
    assert resumed[0]["result"]["content"][0]["text"] == "yes"


async def test_a_client_that_resumes_before_the_hub_sees_it_leave_gets_the_answer(
    hub, alice_endpoint, alice_hub_token
):
    """A half-open connection (a client that changed networks) looks alive to the hub: the call's
    answer goes to it, and must reach the stream the client resumed on meanwhile."""
    url = hub.url(alice_endpoint.path)
    call = _ask(10)
    async with httpx2.AsyncClient(timeout=30) as http:
        headers = await raw_session(http, url, alice_hub_token, capabilities={"sampling": {}})
        async with http.stream("POST", url, content=json.dumps(call), headers=headers) as response:
            # Read one event and no more, the connection kept open (leaving an `async for`
            # closes the generator, and with it the connection).
            messages = sse_messages(response)
            sampling_event_id, sampling = await anext(messages)
            answer = _yes(sampling)
            resumed = []
            resume = {**headers, "Last-Event-ID": sampling_event_id}
            async with asyncio.timeout(10), http.stream("GET", url, headers=resume) as stream:
                posted = await http.post(url, content=json.dumps(answer), headers=headers)
                async for _, message in sse_messages(stream):
                    resumed.append(message)
            await messages.aclose()

    assert posted.status_code == 202
    assert resumed == [{"jsonrpc": "2.0", "id": 10, "result": resumed[0]["result"]}]
    assert resumed[0]["result"]["content"][0]["text"] == "yes"


async def test_a_last_event_id_of_another_session_replays_nothing(
    hub, alice_endpoint, alice_hub_token
):
    url = hub.url(alice_endpoint.path)
    async with httpx2.AsyncClient(timeout=30) as http:
        headers = await raw_session(http, url, alice_hub_token)
        other = await raw_session(http, url, alice_hub_token)
        call = {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {
                "name": "progress",
                "arguments": {"steps": 2},
                "_meta": {"progressToken": "p"},
            },
        }
        async with http.stream("POST", url, content=json.dumps(call), headers=headers) as response:
            ids = [event_id async for event_id, _ in sse_messages(response)]
        stolen = {**other, "Last-Event-ID": ids[0]}
        async with http.stream("GET", url, headers=stolen) as response:
            first_bytes = b""
            async for chunk in response.aiter_bytes():
                first_bytes += chunk
                break
    assert b"progress" not in first_bytes
