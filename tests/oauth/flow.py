"""A headless person for the OAuth flow: opens the authorization URL with a signed-in session,
reads the consent page, submits it over HTTP, and hands the redirect's code back to the client."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthToken,
)


class _Form(HTMLParser):
    """The hidden fields of the consent form (the page's only form with a csrf token)."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "input" and values.get("type") == "hidden" and values.get("name"):
            self.fields[values["name"]] = values.get("value") or ""


def consent_fields(html: str) -> dict[str, str]:
    parser = _Form()
    parser.feed(html)
    return parser.fields


@dataclass
class MemoryStorage:
    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@dataclass
class Person:
    """Approves (or denies) on the consent page with their session cookie."""

    session: str
    approve: bool = True
    consent_pages: list[str] = field(default_factory=list)
    _result: asyncio.Future | None = None

    async def redirect_handler(self, authorization_url: str) -> None:
        self._result = asyncio.get_running_loop().create_future()
        async with httpx2.AsyncClient(cookies={"sessionid": self.session}, timeout=10) as http:
            page = await http.get(authorization_url)
            assert page.status_code == 200, page.text[:500]
            self.consent_pages.append(page.text)
            form = consent_fields(page.text)
            if self.approve:
                form["allow"] = "Authorize"
            reply = await http.post(authorization_url, data=form)
        assert reply.status_code == 302, reply.text[:500]
        self._result.set_result(reply.headers["location"])

    async def callback_handler(self) -> AuthorizationCodeResult:
        location = await self._result
        query = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
        return AuthorizationCodeResult(
            code=query.get("code", ""), state=query.get("state"), iss=query.get("iss")
        )
