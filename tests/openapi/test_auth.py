"""Each security scheme of the document, applied from the server's credentials (`scheme:NAME`)."""

from __future__ import annotations

import pytest

from apps.connections.pool import Pool
from tests.openapi.conftest import api_spec, text_of
from tests.openapi.rest_api import API_KEY, BASIC, BEARER, CLIENT

pytestmark = pytest.mark.anyio

SECRETS = {
    "headerKey": API_KEY,
    "queryKey": API_KEY,
    "cookieKey": API_KEY,
    "bearer": BEARER,
    "basic": ":".join(BASIC),
    "oauth": ":".join(CLIENT),
}


@pytest.mark.parametrize("scheme", sorted(SECRETS))
async def test_each_scheme_authenticates_with_its_value(api, scheme):
    async with Pool() as pool:
        spec = api_spec(api, secrets=SECRETS)
        result = await pool.call_tool(spec, f"whoami_{scheme}", {}, raw=True)

    assert result["isError"] is False, text_of(result)
    assert result["content"][0]["text"].startswith('{"scheme"')


@pytest.mark.parametrize("scheme", ["headerKey", "bearer", "basic"])
async def test_without_or_with_a_wrong_value_the_api_says_401(api, scheme):
    async with Pool() as pool:
        missing = await pool.call_tool(api_spec(api), f"whoami_{scheme}", {}, raw=True)
        wrong = await pool.call_tool(
            api_spec(api, secrets={scheme: "nope:nope"}, name="wrong"),
            f"whoami_{scheme}",
            {},
            raw=True,
        )

    for result in (missing, wrong):
        assert result["isError"] is True
        assert text_of(result).startswith("HTTP 401 Unauthorized") and "who are you?" in text_of(
            result
        )


async def test_client_credentials_token_is_fetched_once_and_renewed_when_refused(api):
    async with Pool() as pool:
        spec = api_spec(api, secrets={"oauth": ":".join(CLIENT)})
        first = await pool.call_tool(spec, "whoami_oauth", {}, raw=True)
        second = await pool.call_tool(spec, "whoami_oauth", {}, raw=True)
        assert api.tokens_issued == 1
        api.revoke_tokens()  # the API forgets it early: the next call is refused, renews, retries
        third = await pool.call_tool(spec, "whoami_oauth", {}, raw=True)

    assert [r["isError"] for r in (first, second, third)] == [False, False, False]
    assert api.tokens_issued == 2


async def test_an_expired_token_is_renewed_before_use(api):
    api.token_lifetime = 0  # expired as soon as issued: every call needs a fresh token
    async with Pool() as pool:
        spec = api_spec(api, secrets={"oauth": ":".join(CLIENT)})
        for _ in range(2):
            assert (await pool.call_tool(spec, "whoami_oauth", {}, raw=True))["isError"] is False

    assert api.tokens_issued == 2


async def test_wrong_client_credentials_say_what_the_token_endpoint_answered(api):
    async with Pool() as pool:
        spec = api_spec(api, secrets={"oauth": "client-1:wrong"})
        result = await pool.call_tool(spec, "whoami_oauth", {}, raw=True)

    assert result["isError"] is True
    assert "the token endpoint of 'oauth' answered HTTP 401" in text_of(result)
    assert "/v1/whoami/oauth" not in api.requests
