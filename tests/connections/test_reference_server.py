"""A server we did not write: `mcp-server-time` from PyPI, discovered and called over stdio."""

import shutil
import sys
from pathlib import Path

import pytest

from apps.connections.specs import ServerSpec

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

BINARY = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent))


@pytest.mark.skipif(BINARY is None, reason="mcp-server-time is not installed (see requirements)")
async def test_time_server_is_discovered_and_answers(pool):
    spec = ServerSpec("time", command=BINARY, args=("--local-timezone", "UTC"))
    found = await pool.discover(spec)
    assert found.server_info.name == "mcp-time"
    assert {"get_current_time", "convert_time"} <= {tool.name for tool in found.tools}
    result = await pool.call_tool(spec, "get_current_time", {"timezone": "UTC"})
    assert not result.is_error and '"timezone": "UTC"' in result.content[0].text
