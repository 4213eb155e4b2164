"""An intercepted authorization code, replayed after the client exchanged it, is refused and ends
the access the client got with it (RFC 6749 §4.1.2). Against the session's real hub."""

from __future__ import annotations

import json
import secrets
from urllib.parse import urlencode

import httpx2
import pytest

from tests.live_hub import INITIALIZE
from tests.oauth.flow import Person
from tests.oauth.oauth_client import challenge_of

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

CALLBACK = "http://127.0.0.1:33419/callback"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def test_a_replayed_code_is_refused_and_the_tokens_from_it_stop_working(
    hub, alice_endpoint, alice_session
):
    resource = hub.url(alice_endpoint.path)
    verifier = secrets.token_urlsafe(48)
    async with httpx2.AsyncClient(timeout=30) as http:
        registered = (
            await http.post(
                hub.url("/oauth/register/"),
                json={
                    "client_name": "Replay Client",
                    "redirect_uris": [CALLBACK],
                    "token_endpoint_auth_method": "none",
                    "grant_types": ["authorization_code", "refresh_token"],
                },
            )
        ).json()
        person = Person(alice_session)
        await person.redirect_handler(
            hub.url(
                "/oauth/authorize/?"
                + urlencode(
                    {
                        "response_type": "code",
                        "client_id": registered["client_id"],
                        "redirect_uri": CALLBACK,
                        "state": "s",
                        "code_challenge": challenge_of(verifier),
                        "code_challenge_method": "S256",
                        "scope": "mcp",
                        "resource": resource,
                    }
                )
            )
        )
        code = (await person.callback_handler()).code
        exchange = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": CALLBACK,
            "client_id": registered["client_id"],
            "code_verifier": verifier,
            "resource": resource,
        }

        tokens = (await http.post(hub.url("/oauth/token/"), data=exchange)).json()
        bearer = {**HEADERS, "Authorization": f"Bearer {tokens['access_token']}"}
        before = await http.post(
            resource, content=json.dumps(INITIALIZE), headers=bearer
        )  # cached by the hub now
        replay = await http.post(hub.url("/oauth/token/"), data=exchange)
        after = await http.post(resource, content=json.dumps(INITIALIZE), headers=bearer)
        refresh = await http.post(
            hub.url("/oauth/token/"),
            data={
                "grant_type": "refresh_token",
                "refresh_token": tokens["refresh_token"],
                "client_id": registered["client_id"],
            },
        )

    assert before.status_code == 200
    assert (replay.status_code, replay.json()["error"]) == (400, "invalid_grant")
    assert after.status_code == 401 and 'error="invalid_token"' in after.headers["www-authenticate"]
    assert (refresh.status_code, refresh.json()["error"]) == (400, "invalid_grant")


async def test_registration_refuses_a_redirect_uri_with_credentials(hub):
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.post(
            hub.url("/oauth/register/"),
            json={
                "client_name": "Sneaky",
                "redirect_uris": ["https://user:s3cret@app.example/cb"],
                "token_endpoint_auth_method": "none",
            },
        )

    assert (response.status_code, response.json()["error"]) == (400, "invalid_redirect_uri")
    assert "user name or password" in response.json()["error_description"]
