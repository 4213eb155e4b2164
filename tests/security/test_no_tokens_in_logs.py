"""No raw token in any log: the real access log of the real web server, and every logging handler."""

from __future__ import annotations

import io
import logging
import sys
import time
from contextlib import contextmanager

import httpx2
import pytest

from apps.accounts.log_filters import RedactTokensFilter
from apps.accounts.services import create_access_token, revoke_access_token
from apps.accounts.tokens import redact
from tests.live_hub import INITIALIZE

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.mark.django_db(transaction=True)
def test_the_access_log_never_holds_a_url_token(hub, alice):
    endpoint = alice.endpoints.get()
    accepted_row, accepted = create_access_token(user=alice, name="in the URL", endpoint=endpoint)
    revoked_row, revoked = create_access_token(user=alice, name="revoked", endpoint=endpoint)
    revoke_access_token(token=revoked_row)
    garbage = "not-a-token-but-secret-looking-0123456789abcdef"
    with httpx2.Client(timeout=10) as http:
        ok = http.post(hub.url(f"/mcp/t/{accepted}/"), json=INITIALIZE, headers=HEADERS)
        refused = [
            http.post(hub.url(f"/mcp/t/{raw}/"), json=INITIALIZE, headers=HEADERS)
            for raw in (revoked, garbage)
        ]
        legacy = http.get(hub.url(f"/mcp/t/{revoked}/sse"))
    assert (
        ok.status_code == 200
        and [r.status_code for r in refused] == [401, 401]
        and legacy.status_code == 401
    )

    log = _wait_for_access_lines(hub, f"/mcp/t/mcphub_{accepted_row.prefix}_", 3)
    for raw in (accepted, revoked, garbage):
        assert raw not in log
    assert (
        f"/mcp/t/mcphub_{accepted_row.prefix}_…/" in log
    )  # the prefix stays, to tell tokens apart
    assert f"/mcp/t/mcphub_{revoked_row.prefix}_…/sse" in log
    assert "/mcp/t/…/" in log


def _wait_for_access_lines(hub, needle: str, count: int) -> str:
    """The server writes the access line as the response starts: give it a moment."""
    deadline = time.monotonic() + 5
    while True:
        log = "\n".join(p.read_text() for p in hub.log_dir.glob("web*.log"))
        if log.count(needle) >= 1 and log.count("/mcp/t/") >= count or time.monotonic() > deadline:
            return log


def test_mcp_requests_get_an_access_line_only_when_asked(settings):
    """uvicorn's own access log through the hub's protocol (mcphub/server_guards.py), on a real
    server: no line for an MCP endpoint unless MCPHUB_MCP_ACCESS_LOG; pages and the API keep
    theirs; a token in the path is redacted by the hub's log filter."""
    import urllib.request

    from tests.live_hub import free_port

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]}
        )
        await send({"type": "http.response.body", "body": b"ok"})

    raw = "mcphub_abcdefghij_" + "S" * 43
    port = free_port()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)  # as the hub's LOGGING handler: redacting
    handler.addFilter(RedactTokensFilter())
    access = logging.getLogger("uvicorn.access")
    access.addHandler(handler)
    level, access.level = access.level, logging.INFO
    try:
        with _serving(app, port):

            def request(path: str) -> None:  # a connection each: the protocol reads the settings
                post = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=b"{}")
                with urllib.request.urlopen(post, timeout=5) as response:
                    assert response.status == 200

            def access_lines() -> list[str]:
                return stream.getvalue().splitlines()

            settings.MCPHUB_MCP_ACCESS_LOG = False
            request("/mcp/alice-default/")
            request(f"/mcp/t/{raw}/")
            request("/api/endpoints/")
            lines = access_lines()
            assert len(lines) == 1 and '"POST /api/endpoints/ HTTP/1.1" 200' in lines[0]

            settings.MCPHUB_MCP_ACCESS_LOG = True
            request(f"/mcp/t/{raw}/")
            lines = access_lines()
            assert len(lines) == 2 and '"POST /mcp/t/mcphub_abcdefghij_…/ HTTP/1.1" 200' in lines[1]
            assert raw not in "\n".join(lines)
    finally:
        access.removeHandler(handler)
        access.setLevel(level)


@contextmanager
def _serving(app, port: int):
    """`app` served by the hub's server configuration (mcphub/server.py) in a thread."""
    import threading

    import uvicorn

    from mcphub import server

    hub_server = uvicorn.Server(server.config("127.0.0.1", port, app))
    thread = threading.Thread(target=hub_server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not hub_server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert hub_server.started, "the server did not start"
    try:
        yield
    finally:
        hub_server.should_exit = True
        thread.join(10)


def test_redact_keeps_the_prefix_and_nothing_secret():
    raw = "mcphub_abcdefghij_" + "S" * 43

    assert (
        redact(f"POST /mcp/t/{raw}/messages?session_id=1")
        == "POST /mcp/t/mcphub_abcdefghij_…/messages?session_id=1"
    )
    assert redact(f"Authorization: Bearer {raw}") == "Authorization: Bearer mcphub_abcdefghij_…"
    assert redact("GET /mcp/t/whatever-junk/sse") == "GET /mcp/t/…/sse"
    assert redact("GET /mcp/alice-default/") == "GET /mcp/alice-default/"


def test_every_log_record_is_redacted_before_a_handler_writes_it():
    raw = "mcphub_abcdefghij_" + "S" * 43
    try:
        raise ValueError(f"boom on /mcp/t/{raw}/")
    except ValueError:
        record = logging.getLogger("x").makeRecord(
            "x",
            logging.ERROR,
            __file__,
            1,
            "gateway error on %s %s",
            ("POST", f"/mcp/t/{raw}/"),
            sys.exc_info(),
        )

    RedactTokensFilter().filter(record)

    assert raw not in logging.Formatter().format(record)
    assert "mcphub_abcdefghij_…" in record.getMessage()
