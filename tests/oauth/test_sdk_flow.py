"""A hosted client connects to alice's endpoint with the `mcp` SDK's own OAuth client, end to end:
discovery → registration → authorization with PKCE → consent → token → tools → refresh."""

from __future__ import annotations

import json
import time

import httpx2
import mcp
import pytest
from asgiref.sync import sync_to_async
from mcp.client.auth import OAuthClientProvider
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

from apps.gateway.auth import CACHE_SECONDS
from apps.oauth.models import ConnectedApp
from tests.live_hub import INITIALIZE, another_web
from tests.oauth.flow import MemoryStorage, Person

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

CALLBACK = "http://127.0.0.1:33418/callback"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def provider_for(url: str, person: Person, storage: MemoryStorage) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(
        client_name="Story Client",
        redirect_uris=[CALLBACK],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )
    return OAuthClientProvider(
        url,
        metadata,
        storage,
        redirect_handler=person.redirect_handler,
        callback_handler=person.callback_handler,
    )


async def echo_through(url: str, provider: OAuthClientProvider, text: str) -> tuple[list[str], str]:
    async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
        async with mcp.Client(
            streamable_http_client(url, http_client=http), mode="legacy", cache=None
        ) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            result = await client.call_tool("echo", {"text": text})
    return tools, result.content[0].text


async def test_the_legacy_sse_transport_signs_in_too(hub, alice_endpoint, alice_session):
    url = hub.url(f"{alice_endpoint.path}sse")
    provider = provider_for(url, Person(alice_session), MemoryStorage())

    async with mcp.Client(sse_client(url, auth=provider), mode="legacy", cache=None) as client:
        result = await client.call_tool("echo", {"text": "over sse"})

    assert result.content[0].text == "over sse"


async def initialize(url: str, token: str) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=10) as http:
        return await http.post(
            url,
            content=json.dumps(INITIALIZE),
            headers={**HEADERS, "Authorization": f"Bearer {token}"},
        )


async def test_the_sdk_client_signs_in_calls_tools_and_refreshes(
    hub, alice_endpoint, alice_session
):
    url = hub.url(alice_endpoint.path)
    person, storage = Person(alice_session), MemoryStorage()
    provider = provider_for(url, person, storage)

    tools, echoed = await echo_through(url, provider, "hello over oauth")

    assert "echo" in tools and "hello over oauth" in echoed
    assert len(person.consent_pages) == 1
    consent = person.consent_pages[0]
    assert (
        "Story Client" in consent
        and alice_endpoint.name in consent
        and "127.0.0.1:33418" in consent
    )
    assert "has not verified this application" in consent  # it registered itself
    first = storage.tokens
    assert first.access_token.startswith("mcphub_oat_") and first.refresh_token
    connection = await sync_to_async(ConnectedApp.objects.select_related("application").get)(
        endpoint=alice_endpoint
    )
    assert connection.application.name == "Story Client"

    # An hour later (as far as the client knows): it refreshes, and the old tokens die with the rotation.
    provider.context.token_expiry_time = time.time() - 1
    tools, echoed = await echo_through(url, provider, "after refresh")

    assert "after refresh" in echoed and len(person.consent_pages) == 1  # no second consent
    assert storage.tokens.access_token != first.access_token
    assert storage.tokens.refresh_token != first.refresh_token
    assert (await initialize(url, first.access_token)).status_code == 401
    assert (await initialize(url, storage.tokens.access_token)).status_code == 200


async def test_a_token_for_alices_endpoint_is_refused_on_bobs(
    hub, alice_endpoint, bob_endpoint, alice_session
):
    storage = MemoryStorage()
    await echo_through(
        hub.url(alice_endpoint.path),
        provider_for(hub.url(alice_endpoint.path), Person(alice_session), storage),
        "x",
    )

    on_bobs = await initialize(hub.url(bob_endpoint.path), storage.tokens.access_token)
    on_url = await initialize(
        hub.url(f"/mcp/t/{storage.tokens.access_token}/"), storage.tokens.access_token
    )

    assert on_bobs.status_code == 401
    assert 'error="invalid_token"' in on_bobs.headers["www-authenticate"]
    assert (
        f'/.well-known/oauth-protected-resource/mcp/{bob_endpoint.slug}/"'
        in on_bobs.headers["www-authenticate"]
    )
    assert on_url.status_code == 401  # never in a URL
    async with httpx2.AsyncClient(timeout=10) as http:
        api = await http.get(
            hub.url("/api/endpoints/"),
            headers={"Authorization": f"Bearer {storage.tokens.access_token}"},
        )
    assert api.status_code == 401  # MCP only: not the REST API


async def test_a_revoked_token_is_refused_at_once(hub, alice_endpoint, alice_session):
    url = hub.url(alice_endpoint.path)
    storage = MemoryStorage()
    await echo_through(url, provider_for(url, Person(alice_session), storage), "x")
    assert (
        await initialize(url, storage.tokens.access_token)
    ).status_code == 200  # cached by the hub now

    async with httpx2.AsyncClient(timeout=10) as http:
        revoked = await http.post(
            hub.url("/oauth/revoke/"),
            data={
                "token": storage.tokens.access_token,
                "client_id": storage.client_info.client_id,
                **(
                    {"client_secret": storage.client_info.client_secret}
                    if storage.client_info.client_secret
                    else {}
                ),
            },
        )

    assert revoked.status_code == 200
    assert (await initialize(url, storage.tokens.access_token)).status_code == 401


async def test_revoking_on_the_endpoint_page_is_felt_at_once_by_every_web_process(
    hub, alice_endpoint, alice_session
):
    url = hub.url(alice_endpoint.path)
    storage = MemoryStorage()
    await echo_through(url, provider_for(url, Person(alice_session), storage), "x")
    token = storage.tokens.access_token
    with another_web(hub.log_dir) as other:
        assert (
            await initialize(f"{other}{alice_endpoint.path}", token)
        ).status_code == 200  # cached there now
        cached_at = time.monotonic()
        connection = await sync_to_async(ConnectedApp.objects.get)(endpoint=alice_endpoint)
        async with httpx2.AsyncClient(cookies={"sessionid": alice_session}, timeout=10) as http:
            page = await http.get(hub.url(alice_endpoint.path.replace("/mcp/", "/endpoints/")))
            csrf = http.cookies["csrftoken"]
            revoked = await http.post(
                hub.url(f"/endpoints/{alice_endpoint.slug}/connected-apps/{connection.pk}/revoke/"),
                data={"csrfmiddlewaretoken": csrf},
            )

        assert page.status_code == 200 and revoked.status_code == 302
        assert (await initialize(f"{other}{alice_endpoint.path}", token)).status_code == 401
        assert (
            time.monotonic() - cached_at < CACHE_SECONDS
        )  # refused while still cached: not by the cache expiring
        assert (await initialize(url, token)).status_code == 401
