"""A REST API whose OpenAPI document asks for OAuth 2's authorization code flow: each user connects
through the hub's upstream-OAuth flow (an app an administrator registered at the API's
authorization server), and the `openapi` server sends the user's own token as the scheme's value
(`scheme:NAME` = `${oauth:SERVER}`). The authorization server is a real OpenID Connect provider
(npm oidc-provider, tests/sso/idp.mjs); the API is its userinfo endpoint, a REST API that answers
with the claims of whoever's token it is given."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async

from apps.catalog import openapi, operations
from apps.catalog.models import McpServer
from apps.toolsets.services import enable_tools
from tests.live_hub import mcp_client
from tests.sso.conftest import Idp
from tests.upstream_oauth.upstream import provider_with_app, register_app

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

APP_ID, APP_SECRET = "hub-openapi-app", "openapi-app-secret"


@pytest.fixture(scope="module")
def provider(hub) -> Iterator[Idp]:
    idp = provider_with_app(hub, APP_ID, APP_SECRET, ["alice-at-api"])
    yield idp
    idp.stop()


def document(issuer: str) -> dict:
    """The userinfo endpoint described as a REST API secured by the authorization code flow."""
    claims = {"type": "object", "properties": {"sub": {"type": "string"}}, "required": ["sub"]}
    return {
        "openapi": "3.0.3",
        "info": {"title": "Who am I", "version": "1"},
        "servers": [{"url": issuer}],
        "components": {
            "securitySchemes": {
                "people": {
                    "type": "oauth2",
                    "flows": {
                        "authorizationCode": {
                            "authorizationUrl": f"{issuer}/auth",
                            "tokenUrl": f"{issuer}/token",
                            "scopes": {"openid": "who you are"},
                        }
                    },
                }
            }
        },
        "security": [{"people": ["openid"]}],
        "paths": {
            "/me": {
                "get": {
                    "operationId": "whoAmI",
                    "summary": "The claims of the person whose token this is",
                    "responses": {
                        "200": {
                            "description": "their claims",
                            "content": {"application/json": {"schema": claims}},
                        }
                    },
                }
            }
        },
    }


@pytest.fixture
def people_api(pool_host, provider, alice, charlie) -> McpServer:
    values = openapi.complete(
        {"openapi_document": json.dumps(document(provider.issuer)), "url": ""}, public_only=False
    )
    server = McpServer(
        name="people", transport="openapi", headers={"scheme:people": "${oauth:people}"}, **values
    )
    server.full_clean()
    server.save()
    register_app(server, provider, APP_ID, APP_SECRET, "openid")
    outcome = operations.discover_now(server=server)  # the document's operations: no one's token
    assert outcome.ok, outcome
    for user in (alice, charlie):
        enable_tools(endpoint=user.endpoints.get(), tools=server.tools.all())
    return server


async def call_as(hub, user, token: str):
    endpoint = await sync_to_async(user.endpoints.get)()
    async with mcp_client(hub.url(endpoint.path), token) as client:
        return await client.call_tool("whoAmI", {})


async def test_each_user_calls_the_api_with_the_token_of_their_own_connection(
    hub, people_api, alice, alice_token, charlie, charlie_token, browser_of
):
    # Alice presses Connect and signs in at the API's authorization server.
    url, flashed = await sync_to_async(
        lambda: browser_of(alice).sign_in_at_provider("people", "alice-at-api")
    )()
    assert url.startswith(f"{people_api.url}/auth?") and f"client_id={APP_ID}" in url
    assert any("people" in message for message in flashed), flashed

    alices = await call_as(hub, alice, alice_token)
    charlies = await call_as(hub, charlie, charlie_token)

    assert alices.is_error is False, alices.content[0].text
    assert alices.structured_content["sub"] == "alice-at-api"  # the API saw alice's own token
    # Charlie never connected: he is told to, and nothing is sent with anyone else's token.
    assert charlies.is_error is True
    assert "connect" in charlies.content[0].text.lower(), charlies.content[0].text
