"""A stdio child sees its configured env plus a minimal base, never the worker's own secrets."""

import pytest

from tests.connections.conftest import text, tiny_spec

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

BASE = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
PYTHON_ADDS = {"LC_CTYPE"}  # CPython's own locale coercion (PEP 538) inside the child


async def test_child_gets_exactly_configured_env_plus_base(pool, monkeypatch):
    monkeypatch.setenv("MCPHUB_WORKER_SECRET", "must-not-leak")
    monkeypatch.setenv("HOME", "/home/hub")
    spec = tiny_spec("env", env={"API_TOKEN": "tok-123"})

    keys = set(text(await pool.call_tool(spec, "env_keys")).split(","))
    assert keys - PYTHON_ADDS <= BASE | {"API_TOKEN"}
    assert "API_TOKEN" in keys
    assert text(await pool.call_tool(spec, "env", {"name": "API_TOKEN"})) == "tok-123"
    assert text(await pool.call_tool(spec, "env", {"name": "MCPHUB_WORKER_SECRET"})) == "<unset>"
    assert text(await pool.call_tool(spec, "env", {"name": "HOME"})) == "/home/hub"
