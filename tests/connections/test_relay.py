"""In-call traffic reaches the calling client: log lines (before the result), sampling, capabilities."""

import asyncio
import json

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from apps.connections.hooks import Relay
from apps.connections.pool import Pool, PoolOptions
from apps.connections.specs import ServerSpec
from tests.connections.conftest import inflight, sdk_spec, text
from tests.connections.test_http_transports import http_server  # noqa: F401  (module fixture)
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


class Recorder:
    """A relay's log sink and a notification hook that write to one ordered timeline."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def relay(self, tag: object = "log", caller: int | None = None, **handlers) -> Relay:
        async def log(params: dict) -> None:
            await asyncio.sleep(
                0.01
            )  # a slow client stream must still be written before the result
            self.events.append(f"{tag}:{params['level']}:{params['data']}")

        return Relay(log=log, caller=caller, **handlers)

    async def on_notification(self, server: str, notification: types.ServerNotification) -> None:
        if isinstance(notification, types.LoggingMessageNotification):
            self.events.append(f"hook:{notification.params.data}")


async def _call_and_mark(
    pool, spec, recorder: Recorder, count: int, relay: Relay | None, **kwargs
) -> None:
    result = await pool.call_tool(spec, "chatty", {"count": count}, relay=relay, **kwargs)
    recorder.events.append(
        f"result:{text(result) if not isinstance(result, dict) else result['content'][0]['text']}"
    )


@pytest.mark.parametrize("raw", [False, True])
async def test_log_lines_during_a_call_reach_its_caller_before_the_result(raw):
    recorder = Recorder()
    async with Pool(on_notification=recorder.on_notification) as pool:
        spec = sdk_spec("echo")
        await _call_and_mark(pool, spec, recorder, 3, recorder.relay(), raw=raw)
        assert recorder.events == [
            "log:info:line 0",
            "log:info:line 1",
            "log:info:line 2",
            "result:said 3",
        ]

        recorder.events.clear()  # no relay (or one without log): the server-wide hook hears them
        await _call_and_mark(pool, spec, recorder, 2, Relay(), raw=raw)
        await eventually_async(lambda: len(recorder.events) >= 3)
        assert sorted(recorder.events) == ["hook:line 0", "hook:line 1", "result:said 2"]


async def test_over_stdio_unattributed_lines_go_to_a_call_only_when_all_are_one_callers():
    recorder = Recorder()
    async with Pool(on_notification=recorder.on_notification) as pool:
        spec = sdk_spec("echo")
        await pool.call_tool(spec, "echo", {"text": "warm"})
        for old, new in ((1, 1), (1, 2)):  # alice's two calls; then alice's and bob's
            slow = asyncio.create_task(
                pool.call_tool(spec, "slow", {"seconds": 0.5}, relay=recorder.relay(old, old))
            )
            await eventually_async(lambda: inflight(pool) == 1)
            await pool.call_tool(spec, "chatty", {"count": 2}, relay=recorder.relay(new, new))
            await eventually_async(lambda: len(recorder.events) >= 2)
            await slow
    # Stdio says nothing about which call a line belongs to: among one caller's calls the oldest
    # is told; when another user's call is in flight too, neither is (the server-wide hook hears
    # them), or one user would read what another's call is doing.
    assert recorder.events == ["1:info:line 0", "1:info:line 1", "hook:line 0", "hook:line 1"]


async def test_over_stdio_sampling_is_refused_while_another_callers_call_could_have_asked():
    asked = []

    async def answer(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append(params.messages[0].content.text)
        content = types.TextContent(type="text", text="yes")
        return types.CreateMessageResult(role="assistant", model="m", content=content)

    async with Pool() as pool:
        spec = sdk_spec("echo")
        alone = await pool.call_tool(
            spec, "ask", {"question": "alone"}, relay=Relay(sampling=answer), raw=True
        )
        slow = asyncio.create_task(
            pool.call_tool(spec, "slow", {"seconds": 0.5}, relay=Relay(sampling=answer, caller=2))
        )
        await eventually_async(lambda: inflight(pool) == 1)
        with pytest.raises(MCPError, match="calls of different callers are in flight"):
            await pool.call_tool(
                spec,
                "ask",
                {"question": "crowded"},
                relay=Relay(sampling=answer, caller=1),
                raw=True,
            )
        await slow
    assert asked == ["alone"]  # the only call in flight is surely the one that asked
    assert "yes" in json.dumps(alone)


async def test_over_streamable_http_lines_reach_exactly_their_own_call(http_server):  # noqa: F811
    recorder = Recorder()
    spec = ServerSpec("remote-echo", transport="streamable_http", url=http_server)
    async with Pool(on_notification=recorder.on_notification) as pool:
        await pool.call_tool(spec, "echo", {"text": "warm"})
        slow = asyncio.create_task(
            pool.call_tool(spec, "slow", {"seconds": 0.5}, relay=recorder.relay("old"))
        )
        await eventually_async(lambda: inflight(pool) == 1)
        await _call_and_mark(pool, spec, recorder, 2, recorder.relay("new"), raw=True)
        await slow
    # The request's own response stream says whose lines these are.
    assert recorder.events == ["new:info:line 0", "new:info:line 1", "result:said 2"]


async def test_sampling_during_a_streamable_http_call_is_answered_by_its_caller(http_server):  # noqa: F811
    async def answer(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        content = types.TextContent(
            type="text", text=f"http says {params.messages[0].content.text}"
        )
        return types.CreateMessageResult(role="assistant", model="m", content=content)

    spec = ServerSpec("remote-echo", transport="streamable_http", url=http_server)
    async with Pool() as pool:
        result = await pool.call_tool(
            spec, "ask", {"question": "hi"}, relay=Relay(sampling=answer), raw=True
        )
    assert result["content"][0]["text"] == "http says hi"


async def test_backends_are_told_we_answer_sampling_and_elicitation():
    spec = sdk_spec("echo")
    async with Pool() as pool:
        declared = json.loads(text(await pool.call_tool(spec, "client_capabilities")))
    assert "sampling" in declared and "elicitation" in declared
    async with Pool(
        PoolOptions(relay=frozenset())
    ) as pool:  # MCPHUB_POOL {"relay": []}: nothing to relay
        declared = json.loads(text(await pool.call_tool(spec, "client_capabilities")))
    assert "sampling" not in declared and "elicitation" not in declared


async def test_raw_results_are_the_backends_json():
    spec = sdk_spec("echo")
    async with Pool() as pool:
        typed = await pool.call_tool(spec, "add", {"a": 2, "b": 3})
        raw = await pool.call_tool(spec, "add", {"a": 2, "b": 3}, raw=True)
        missing = await pool.call_tool(spec, "no_such_tool", raw=True)
    dumped = typed.model_dump(by_alias=True, mode="json", exclude_none=True)
    dumped.pop("resultType")  # a 2026-07-28 field the model fills in; a 2025 backend never sent it
    assert raw == dumped
    assert raw["structuredContent"] == {"result": 5} and raw["isError"] is False
    assert missing["isError"] is True
