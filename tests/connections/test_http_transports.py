"""Remote servers over Streamable HTTP and legacy SSE work like stdio ones."""

import subprocess

import pytest

from apps.connections.pool import Pool
from apps.connections.specs import ServerSpec
from tests.connections.conftest import PYTHON, SERVERS, free_port, text
from tests.live_hub import _accepts
from tests.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def _serve(transport: str):
    port = free_port()
    proc = subprocess.Popen(
        [PYTHON, str(SERVERS / "echo.py"), transport, str(port)], stderr=subprocess.DEVNULL
    )
    try:
        eventually(lambda: _accepts(port), timeout=20, what=f"the echo {transport} server")
    except AssertionError:
        proc.kill()
        raise
    return proc, port


@pytest.fixture(scope="module")
def http_server():
    proc, port = _serve("http")
    yield f"http://127.0.0.1:{port}/mcp"
    proc.kill()
    proc.wait()


@pytest.fixture(scope="module")
def sse_server():
    proc, port = _serve("sse")
    yield f"http://127.0.0.1:{port}/sse"
    proc.kill()
    proc.wait()


async def test_streamable_http_with_headers(http_server):
    spec = ServerSpec(
        "remote", transport="streamable_http", url=http_server, headers={"X-Api-Key": "k"}
    )
    async with Pool() as pool:
        assert text(await pool.call_tool(spec, "echo", {"text": "over http"})) == "over http"
        assert {"echo", "add"} <= {t.name for t in (await pool.discover(spec)).tools}


async def test_legacy_sse(sse_server):
    spec = ServerSpec("legacy", transport="sse", url=sse_server)
    async with Pool() as pool:
        assert (await pool.call_tool(spec, "add", {"a": 20, "b": 22})).structured_content == {
            "result": 42
        }
