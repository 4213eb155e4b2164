"""The SDK's private API the pool uses is still where `apps/connections/sdk.py` reaches for it.

When this fails after an upgrade of `mcp` (or httpx2), the message names what moved: fix it in
sdk.py, the one module that touches it (the lean request path and the transports depend on it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client.session import ClientSession

from apps.connections import sdk

pytestmark = pytest.mark.anyio

APPS = Path(__file__).resolve().parents[2] / "apps"


async def test_the_private_api_the_pool_uses_is_still_there():
    send, receive = anyio.create_memory_object_stream(1)
    session = ClientSession(receive, send)
    async with httpx2.AsyncClient() as http:
        missing = sdk.missing(session, http)
    send.close()
    receive.close()
    assert missing == [], (
        "the SDK's private API moved; adapt apps/connections/sdk.py: " + "; ".join(missing)
    )


def test_no_other_module_touches_the_private_api():
    """Grep-level fence: the names below appear in sdk.py only."""
    names = (
        "._stamp(",
        "._dispatcher",
        "._on_request(",
        "._on_notify(",
        "mcp.client._transport",
        "._transport_for_url(",
    )
    found = subprocess.run(
        ["grep", "-rnF", *[f"-e{n}" for n in names], "--include=*.py", str(APPS)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.splitlines()
    outside = [line for line in found if not line.startswith(str(APPS / "connections" / "sdk.py"))]
    assert outside == [], "private SDK API used outside apps/connections/sdk.py:\n" + "\n".join(
        outside
    )


def test_sdk_module_imports_on_its_own():
    # An import-time move (mcp.client._transport) fails with the module's name in the error.
    result = subprocess.run(
        [sys.executable, "-c", "import apps.connections.sdk"],
        cwd=APPS.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
