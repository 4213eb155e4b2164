"""What a hosted client discovers from a 401: the endpoint's protected resource metadata (RFC 9728)
and the hub's authorization server metadata (RFC 8414), as the MCP authorization spec asks."""

from __future__ import annotations

import json

import httpx2
import pytest

from tests.live_hub import INITIALIZE

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def post(url: str, token: str | None = None) -> httpx2.Response:
    headers = {**HEADERS, **({"Authorization": f"Bearer {token}"} if token else {})}
    async with httpx2.AsyncClient(timeout=10) as http:
        return await http.post(url, content=json.dumps(INITIALIZE), headers=headers)


def challenge_params(header: str) -> dict[str, str]:
    assert header.startswith("Bearer ")
    return dict(part.strip().split("=", 1) for part in header[7:].split(", "))


async def test_a_401_points_to_the_endpoints_resource_metadata(hub, alice_endpoint):
    response = await post(hub.url(alice_endpoint.path))

    assert response.status_code == 401
    params = {
        k: v.strip('"') for k, v in challenge_params(response.headers["www-authenticate"]).items()
    }
    assert params["resource_metadata"] == hub.url(
        f"/.well-known/oauth-protected-resource/mcp/{alice_endpoint.slug}/"
    )
    assert params["scope"] == "mcp" and "error" not in params
    async with httpx2.AsyncClient(timeout=10) as http:
        metadata = (await http.get(params["resource_metadata"])).json()
        server = (await http.get(hub.url("/.well-known/oauth-authorization-server"))).json()

    assert metadata["resource"] == hub.url(alice_endpoint.path)
    assert metadata["authorization_servers"] == [hub.base_url] and metadata["scopes_supported"] == [
        "mcp"
    ]
    assert server["issuer"] == hub.base_url
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["response_types_supported"] == ["code"]
    assert server["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert server["client_id_metadata_document_supported"] is True
    assert server["registration_endpoint"] == hub.url("/oauth/register/")
    assert server["revocation_endpoint"] == hub.url("/oauth/revoke/")
    assert "none" in server["token_endpoint_auth_methods_supported"]


async def test_the_legacy_sse_url_points_to_the_same_metadata(hub, alice_endpoint):
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.get(hub.url(f"{alice_endpoint.path}sse"))

    assert response.status_code == 401
    assert (
        f'resource_metadata="{hub.url(f"/.well-known/oauth-protected-resource/mcp/{alice_endpoint.slug}/")}"'
        in response.headers["www-authenticate"]
    )


async def test_metadata_for_a_missing_endpoint_looks_like_any_other(hub):
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.get(
            hub.url("/.well-known/oauth-protected-resource/mcp/no-such-endpoint/")
        )

    assert response.status_code == 200  # nothing tells which endpoints exist
    assert response.json()["resource"] == hub.url("/mcp/no-such-endpoint/")


async def test_hub_tokens_keep_working_and_garbage_gets_the_challenge(
    hub, alice_endpoint, alice_hub_token
):
    ok = await post(hub.url(alice_endpoint.path), alice_hub_token)
    garbage = await post(hub.url(alice_endpoint.path), "mcphub_oat_" + "x" * 43)

    assert ok.status_code == 200
    assert garbage.status_code == 401
    assert 'error="invalid_token"' in garbage.headers["www-authenticate"]
    assert "resource_metadata=" in garbage.headers["www-authenticate"]
