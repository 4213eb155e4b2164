"""Helpers for the upstream OAuth tests: the OAuth-protected backend, and a user's browser session
on the live hub that drives Connect through the backend's approve page."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from urllib.parse import parse_qs, urlparse

import httpx2
from asgiref.sync import sync_to_async
from django.test import Client

from apps.accounts.services import create_access_token
from apps.credentials.upstream import services as upstream_services
from apps.credentials.upstream.models import UpstreamOAuthApp
from tests.live_hub import SERVERS, _accepts, free_port, mcp_client
from tests.sso.conftest import Idp, walk
from tests.waiting import eventually


class OAuthBackend:
    """tests/servers/oauth_protected.py in a child process (its own authorization server);
    `registration=False`: no dynamic client registration, clients are registered by hand."""

    def __init__(self, token_ttl: int = 3600, *, registration: bool = True) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/mcp"
        args = [
            sys.executable,
            str(SERVERS / "oauth_protected.py"),
            str(self.port),
            "--token-ttl",
            str(token_ttl),
        ] + ([] if registration else ["--no-registration"])
        self.process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        eventually(lambda: _accepts(self.port), timeout=30, what="the OAuth backend to start")

    def stats(self) -> dict:
        return httpx2.get(f"{self.base}/admin/stats").json()

    def register_client(
        self, client_id: str, client_secret: str, redirect_uri: str, auth_method: str = ""
    ) -> None:
        """What an administrator does at the authorization server's console."""
        form = {"client_id": client_id, "client_secret": client_secret}
        form |= {"redirect_uri": redirect_uri, "auth_method": auth_method}
        httpx2.post(f"{self.base}/admin/clients", data=form).raise_for_status()

    def revoke(self, subject: str) -> int:
        return httpx2.post(f"{self.base}/admin/revoke", data={"subject": subject}).json()["revoked"]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class HubBrowser:
    """A signed-in user's browser session against the hub process (cookies, no JavaScript)."""

    def __init__(self, base_url: str, user) -> None:
        client = Client()
        client.force_login(user)
        self.http = httpx2.Client(base_url=base_url, follow_redirects=False, timeout=30)
        self.http.cookies.set("sessionid", client.cookies["sessionid"].value)

    def tools_page(self) -> str:
        return self.http.get("/tools/").text

    def start_connect(self, server: str) -> httpx2.Response:
        """Press Connect: the hub's answer (a page moving on to the backend's authorization server, or back with an error)."""
        page = self.tools_page()
        return self.http.post(
            f"/servers/{server}/connect/",
            data={"csrfmiddlewaretoken": csrf(page), "next": "/tools/"},
        )

    def authorization_url(self, server: str) -> str:
        answer = self.start_connect(server)
        assert answer.status_code == 200, answer.text[:500]
        return html.unescape(
            re.search(r'id="continue-sign-in" href="([^"]+)"', answer.text).group(1)
        )

    def authorize(self, server: str, *, subject: str | None, deny: bool = False) -> httpx2.Response:
        """Connect through the backend's approve page; returns the hub's answer to the callback."""
        to_approve = httpx2.get(self.authorization_url(server))
        assert to_approve.status_code == 302, to_approve.text
        approve_url = to_approve.headers["location"]
        request_id = parse_qs(urlparse(approve_url).query)["request"][0]
        assert httpx2.get(approve_url).status_code == 200
        form = {
            "request": request_id,
            "action": "deny" if deny else "approve",
            "subject": subject or "",
        }
        back = httpx2.post(approve_url.split("?")[0], data=form)
        assert back.status_code == 302, back.text
        return self.callback(back.headers["location"])

    def sign_in_at_provider(self, server: str, account: str) -> tuple[str, list[str]]:
        """Press Connect and sign in as `account` at an OpenID Connect provider (an `Idp`): the
        authorization URL the hub sent the browser to, and the flash messages it shows back."""
        url = self.authorization_url(server)
        back = walk(url, account, back_to=str(self.http.base_url))
        return url, self.messages(self.callback(back))

    def callback(self, url: str) -> httpx2.Response:
        parsed = urlparse(url)
        return self.http.get(f"{parsed.path}?{parsed.query}")

    def messages(self, response: httpx2.Response) -> list[str]:
        """Follow the hub's redirect and read the flash messages it shows."""
        page = self.http.get(response.headers["location"]).text
        return [
            html.unescape(m).strip()
            for m in re.findall(r'<div class="flash flash-\w+"[^>]*>(.*?)</div>', page, re.S)
        ]


def provider_with_app(hub, client_id: str, secret: str, accounts, **options) -> Idp:
    """A real OpenID Connect provider (npm oidc-provider) where an administrator registered the
    hub's app by hand (no dynamic registration), with these accounts to sign in as."""
    app = {
        "client_id": client_id,
        "client_secret": secret,
        "redirect_uris": [f"{hub.base_url}/oauth/upstream/callback/"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_post",
    }
    idp = Idp(base_urls=["http://testserver"], clients=[app], **options)
    idp.accounts(**{name: {"email": f"{name}@api.test"} for name in accounts})
    return idp


def register_app(server, provider: Idp, client_id: str, secret: str, scopes: str) -> None:
    """What an administrator enters on the server's pre-registered app form."""
    app = UpstreamOAuthApp(
        server=server,
        client_id=client_id,
        client_secret=secret,
        scopes=scopes,
        metadata_url=f"{provider.issuer}/.well-known/openid-configuration",
    )
    upstream_services.read_app_server(app)
    upstream_services.save_app(app=app)


def csrf(page: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)


async def connect(browser_of, user, subject: str) -> None:
    await sync_to_async(lambda: browser_of(user).authorize("vault", subject=subject))()


async def whoami(hub, user) -> tuple[dict | None, str]:
    endpoint = await sync_to_async(user.endpoints.get)()
    token = (await sync_to_async(create_access_token)(user=user, name="laptop"))[1]
    async with mcp_client(hub.url(endpoint.path), token) as client:
        result = await client.call_tool("whoami", {})
    text = result.content[0].text if result.content else ""
    return (None if result.is_error else json.loads(text)), text
