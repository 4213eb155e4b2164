"""What a backend sends us unasked reaches the right place: hooks, the calling client, progress."""

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from apps.connections.hooks import Relay
from apps.connections.pool import Pool
from tests.connections.conftest import sdk_spec, text
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


async def _answer(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    question = params.messages[0].content.text
    return types.CreateMessageResult(
        role="assistant",
        model="scripted",
        content=types.TextContent(type="text", text=f"answer to {question}"),
    )


async def test_notifications_progress_and_sampling_are_relayed():
    seen: list[tuple[str, str]] = []

    async def on_notification(server: str, notification: types.ServerNotification) -> None:
        seen.append((server, notification.method))

    async with Pool(on_notification=on_notification) as pool:
        spec = sdk_spec("echo")
        await pool.call_tool(spec, "touch_tools")
        await pool.call_tool(spec, "log", {"message": "hello"})

        updates: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            updates.append((progress, total, message))

        await pool.call_tool(spec, "progress", {"steps": 3}, progress_callback=on_progress)
        asked = await pool.call_tool(
            spec, "ask", {"question": "6x7"}, relay=Relay(sampling=_answer)
        )
        with pytest.raises(
            MCPError, match="no client is attached to answer sampling/createMessage"
        ):
            await pool.call_tool(
                spec, "ask", {"question": "anyone?"}
            )  # no relay: the backend hears why
        await eventually_async(
            lambda: (
                {"notifications/tools/list_changed", "notifications/message"}
                <= {method for _, method in seen}
            )
        )

    assert ("echo", "notifications/tools/list_changed") in seen
    assert ("echo", "notifications/message") in seen
    assert not any(method == "notifications/progress" for _, method in seen)
    assert sorted(updates) == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]
    assert text(asked) == "answer to 6x7"
