"""Streamable HTTP backends over HTTPS, the way most remote MCP servers are reached (pool level).

The echo server runs over TLS with certificates of throwaway CAs; the hub trusts a private CA
the way an operator makes it (SSL_CERT_FILE, read by httpx2's `create_ssl_context()`). The SDK's
handshake (httpx2) and the lean request path (transports/http1.py) must trust the same roots:
calls work on the lean path with their keep-alive connection reused, and a certificate the
hub must not accept (unknown CA, another host's name) fails fast with the reason, on the
handshake and on the lean client's own connections.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time

import httpx2
import pytest

from apps.connections.errors import ServerCrashed, ServerStartFailed
from apps.connections.pool import Pool, PoolOptions
from apps.connections.specs import ServerSpec
from apps.connections.transports.http1 import Http1Client, HttpError
from apps.connections.transports.lean_http import LeanHttp
from tests.live_hub import SERVERS, TlsFiles, free_port, make_tls_files
from tests.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def _accepts(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _serve_https(files: TlsFiles, port: int | None = None) -> tuple[subprocess.Popen, int]:
    port = port or free_port()
    env = {**os.environ, "ECHO_TLS_CERT": str(files.cert), "ECHO_TLS_KEY": str(files.key)}
    proc = subprocess.Popen(
        [sys.executable, str(SERVERS / "echo.py"), "https", str(port)],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        eventually(lambda: _accepts(port), timeout=20, what="the echo HTTPS server to come up")
    except AssertionError:
        proc.kill()
        proc.wait()
        raise
    return proc, port


def _stop(proc: subprocess.Popen) -> None:
    proc.kill()
    proc.wait()


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """Certificates: `trusted` (our private CA, for 127.0.0.1), `elsewhere` (a CA we trust too,
    but a certificate for another host name), `unknown` (a CA the hub was never told about),
    and `bundle`, the CA file an operator points SSL_CERT_FILE at."""
    directory = tmp_path_factory.mktemp("tls")
    files = {
        "trusted": make_tls_files(directory, "trusted"),
        "elsewhere": make_tls_files(directory, "elsewhere", san="DNS:elsewhere.test"),
        "unknown": make_tls_files(directory, "unknown"),
    }
    bundle = directory / "private-cas.pem"
    bundle.write_text(files["trusted"].ca.read_text() + files["elsewhere"].ca.read_text())
    return files, bundle


@pytest.fixture(scope="module")
def servers(tls):
    """One echo https server per certificate: {name: URL}."""
    files, _ = tls
    started = {name: _serve_https(f) for name, f in files.items()}
    yield {name: f"https://127.0.0.1:{port}/mcp" for name, (_, port) in started.items()}
    for proc, _ in started.values():
        _stop(proc)


@pytest.fixture
def trust_private_cas(tls, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(tls[1]))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)


def _lean(pool: Pool, name: str):
    conn = pool._servers[name].conn
    assert conn is not None
    return conn.lean


async def test_calls_over_https_take_the_lean_path_on_one_reused_tls_connection(
    servers, trust_private_cas
):
    spec = ServerSpec("remote", transport="streamable_http", url=servers["trusted"])
    async with Pool() as lean_pool, Pool(PoolOptions(lean_requests=False)) as sdk_pool:
        lean_result = await lean_pool.call_tool(spec, "add", {"a": 2, "b": 3}, raw=True)
        sdk_result = await sdk_pool.call_tool(spec, "add", {"a": 2, "b": 3}, raw=True)
        assert (
            lean_result
            == sdk_result
            == {
                "content": [{"type": "text", "text": "5"}],
                "structuredContent": {"result": 5},
                "isError": False,
            }
        )
        lean = _lean(lean_pool, "remote")
        assert isinstance(lean, LeanHttp) and _lean(sdk_pool, "remote") is None
        # The lean client verifies with the very context the SDK's handshake used.
        assert lean._h1.ssl is lean.link.tls is lean.link.http._transport._pool._ssl_context

        idle = list(lean._h1.idle)
        assert len(idle) == 1
        tls_object = idle[0].writer.get_extra_info("ssl_object")
        assert tls_object is not None and tls_object.version() in ("TLSv1.2", "TLSv1.3")
        assert ("IP Address", "127.0.0.1") in tls_object.getpeercert()["subjectAltName"]
        for i in range(5):
            result = await lean_pool.call_tool(spec, "echo", {"text": f"again {i}"}, raw=True)
            assert result["content"][0]["text"] == f"again {i}"
        assert lean._h1.idle == idle, "sequential calls reuse the one keep-alive TLS connection"

        many = await asyncio.gather(
            *(lean_pool.call_tool(spec, "echo", {"text": f"m{i}"}, raw=True) for i in range(20))
        )
        assert [r["content"][0]["text"] for r in many] == [f"m{i}" for i in range(20)]
        header = await lean_pool.call_tool(spec, "header", {"name": "mcp-name"}, raw=True)
        assert header["content"][0]["text"] == "header"
        stats = (await lean_pool.stats())["servers"]["remote"]
        assert stats["starts"] == 1 and stats["failures"] == 0


@pytest.mark.parametrize("lean", [True, False], ids=["lean", "sdk"])
async def test_an_untrusted_certificate_fails_the_handshake_at_once_with_the_reason(
    servers, tls, monkeypatch, lean
):
    options = PoolOptions(lean_requests=lean)
    cases = [
        (
            "trusted",
            False,
            "certificate verify failed",
        ),  # our CA, but the operator did not configure it
        ("unknown", True, "certificate verify failed"),
        ("elsewhere", True, "mismatch"),  # a trusted CA, a certificate for another host
    ]
    for name, configured, reason in cases:
        if configured:
            monkeypatch.setenv("SSL_CERT_FILE", str(tls[1]))
        else:
            monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        spec = ServerSpec(name, transport="streamable_http", url=servers[name])
        async with Pool(options) as pool:
            started = time.monotonic()
            with pytest.raises(ServerStartFailed) as caught:
                await pool.call_tool(spec, "echo", {"text": "hi"}, raw=True)
            assert time.monotonic() - started < 5, "a refused certificate is an answer, not a hang"
            assert reason in str(caught.value) and name in str(caught.value)
            assert reason in (await pool.stats())["servers"][name]["last_error"]


async def test_the_lean_client_refuses_untrusted_certificates_itself(
    servers, tls, trust_private_cas
):
    """What a session made with a trusted certificate meets when a new connection is not: the
    lean client verifies every connection it opens (CA and host name), with the reason."""
    context = httpx2.create_ssl_context()
    ok = Http1Client(
        servers["trusted"],
        {"accept": "application/json, text/event-stream", "content-type": "application/json"},
        context,
    )
    ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    response = await ok.post(ping, {})
    await response.aread()
    await response.aclose()
    assert response.status_code in (400, 404), (
        "reached the server over TLS (no session: refused by MCP, not by TLS)"
    )
    ok.close()
    for name, reason in (("unknown", "certificate verify failed"), ("elsewhere", "mismatch")):
        client = Http1Client(servers[name], {}, context)
        started = time.monotonic()
        with pytest.raises(HttpError) as caught:
            await client.post(ping, {})
        assert time.monotonic() - started < 5
        assert reason in str(caught.value) and "cannot connect to 127.0.0.1" in str(caught.value)
        client.close()


async def test_a_server_that_never_finishes_the_tls_handshake_fails_the_connect_in_time():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]  # accepts (in the backlog), never answers the ClientHello
        client = Http1Client(
            f"https://127.0.0.1:{port}/mcp", {}, httpx2.create_ssl_context(), connect_timeout=0.5
        )
        started = time.monotonic()
        with pytest.raises(HttpError, match="timed out after 0.5 s"):
            await client.post(b"{}", {})
        assert time.monotonic() - started < 3


async def test_a_backend_whose_certificate_changes_to_an_unknown_ca_fails_the_next_call(
    tls, trust_private_cas
):
    """A session up over a trusted certificate; the server comes back with one of an unknown CA:
    the lean call's new connection is refused, and the pool reports why instead of hanging."""
    files, _ = tls
    proc, port = _serve_https(files["trusted"])
    try:
        spec = ServerSpec(
            "remote", transport="streamable_http", url=f"https://127.0.0.1:{port}/mcp"
        )
        async with Pool() as pool:
            assert (await pool.call_tool(spec, "echo", {"text": "up"}, raw=True))["content"][0][
                "text"
            ] == "up"
            assert isinstance(_lean(pool, "remote"), LeanHttp)
            _stop(proc)
            proc, _ = _serve_https(files["unknown"], port)
            started = time.monotonic()
            with pytest.raises(ServerCrashed) as caught:
                await pool.call_tool(spec, "echo", {"text": "down"}, raw=True)
            assert time.monotonic() - started < 10
            assert "HttpError: cannot connect" in str(
                caught.value
            ) and "certificate verify failed" in str(caught.value)
            assert (
                "certificate verify failed"
                in (await pool.stats())["servers"]["remote"]["last_error"]
            )
    finally:
        _stop(proc)
