"""Bad requests to the authorization server get the OAuth error they deserve, and change nothing."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application

from apps.oauth.models import RedeemedCode
from apps.oauth.selectors import access_grant
from apps.oauth.services import clear_expired
from tests.oauth.flow import consent_fields
from tests.oauth.oauth_client import (
    CALLBACK,
    approve,
    authorize_params,
    endpoint_resource,
    exchange,
    public_client,
    query_of,
    register,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


@pytest.mark.parametrize(
    "uri",
    [
        "http://evil.example/callback",
        "javascript:alert(1)",
        "ftp://127.0.0.1/cb",
        "https://app.example/cb#frag",
        "//no-scheme/cb",
        "myapp://callback",
        "https://user:s3cret@app.example/cb",
        "https://app.example@evil.example/cb",
        "http://user:s3cret@127.0.0.1:5/cb",
        "cursor://user:s3cret@anysphere.cursor-retrieval/cb",
    ],
)
def test_registration_refuses_redirect_uris_that_are_not_https_or_loopback(client, uri):
    status, body = register(client, redirect_uris=[CALLBACK, uri])

    assert (status, body["error"]) == (400, "invalid_redirect_uri")
    assert "s3cret" not in body["error_description"]
    assert not Application.objects.exists()


@pytest.mark.parametrize(
    "uri", ["https://user:s3cret@app.example/cb", "http://evil.example/callback"]
)
def test_a_registration_update_passes_the_same_checks(client, uri):
    status, body = register(client)
    assert status == 201
    url, auth = body["registration_client_uri"], f"Bearer {body['registration_access_token']}"
    update = {
        "client_name": "Hand Client",
        "redirect_uris": [CALLBACK, uri],
        "token_endpoint_auth_method": "none",
    }

    refused = client.put(
        url, json.dumps(update), content_type="application/json", HTTP_AUTHORIZATION=auth
    )
    renamed = client.put(
        url,
        json.dumps({**update, "redirect_uris": [CALLBACK], "client_name": "Renamed"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=auth,
    )

    assert (refused.status_code, refused.json()["error"]) == (400, "invalid_redirect_uri")
    assert renamed.status_code == 200  # a good update still goes through
    assert Application.objects.get().redirect_uris == CALLBACK


@pytest.mark.parametrize(
    "metadata",
    [
        {"grant_types": ["implicit"]},
        {"grant_types": ["client_credentials"]},
        {"response_types": ["token"]},
        {"client_name": "x" * 101},
    ],
)
def test_registration_refuses_other_grants_and_odd_metadata(client, metadata):
    status, body = register(client, **metadata)

    assert (status, body["error"]) == (400, "invalid_client_metadata")
    assert not Application.objects.exists()


def test_registration_refuses_a_body_that_is_not_json(client):
    response = client.post("/oauth/register/", "{nope", content_type="application/json")

    assert (response.status_code, response.json()["error"]) == (400, "invalid_client_metadata")


def test_registration_accepts_loopback_https_and_listed_native_redirects(client):
    uris = [
        CALLBACK,
        "http://localhost:5/cb",
        "http://[::1]:6/cb",
        "https://app.example/cb",
        "cursor://anysphere.cursor-retrieval/oauth/callback",
    ]
    status, body = register(client, redirect_uris=uris)

    assert status == 201
    assert (
        body["client_id"]
        and body["token_endpoint_auth_method"] == "none"
        and "client_secret" not in body
    )


def test_registrations_are_rate_limited_per_address(client, settings):
    settings.MCPHUB_OAUTH_REGISTRATIONS_PER_HOUR = 2

    statuses = [register(client)[0] for _ in range(3)]

    assert statuses == [201, 201, 429]
    assert Application.objects.count() == 2


def test_a_spoofed_x_forwarded_for_does_not_escape_the_registration_limit(settings):
    settings.MCPHUB_OAUTH_REGISTRATIONS_PER_HOUR = 2

    statuses = [register(Client(HTTP_X_FORWARDED_FOR=f"198.51.100.{n}"))[0] for n in range(3)]

    assert statuses == [201, 201, 429]


def test_behind_a_trusted_proxy_each_client_has_its_own_registration_limit(settings):
    settings.MCPHUB_OAUTH_REGISTRATIONS_PER_HOUR, settings.MCPHUB_TRUSTED_PROXIES = 2, 1
    cache.delete_many(["oauth:dcr:198.51.100.1", "oauth:dcr:198.51.100.2"])

    first = [register(Client(HTTP_X_FORWARDED_FOR="198.51.100.1"))[0] for _ in range(3)]
    second = register(Client(HTTP_X_FORWARDED_FOR="6.6.6.6, 198.51.100.2"))[0]

    assert (first, second) == ([201, 201, 429], 201)


def test_an_unregistered_redirect_uri_is_never_redirected_to(alice_client, alice):
    app = public_client(alice_client)

    response = alice_client.get(
        "/oauth/authorize/",
        authorize_params(
            app, endpoint_resource(alice.endpoints.get()), redirect_uri="http://127.0.0.1:9/evil"
        ),
    )

    assert response.status_code == 400
    assert "Location" not in response
    assert b"invalid_request" in response.content


def test_missing_pkce_is_refused_with_invalid_request(alice_client, alice):
    app = public_client(alice_client)

    response = alice_client.get(
        "/oauth/authorize/",
        authorize_params(
            app,
            endpoint_resource(alice.endpoints.get()),
            code_challenge=None,
            code_challenge_method=None,
        ),
    )

    assert response.status_code == 302 and response["Location"].startswith(CALLBACK)
    assert query_of(response["Location"])["error"] == "invalid_request"
    assert query_of(response["Location"])["state"] == "st4te"


def test_plain_pkce_is_refused(alice_client, alice):
    app = public_client(alice_client)

    response = alice_client.get(
        "/oauth/authorize/",
        authorize_params(
            app,
            endpoint_resource(alice.endpoints.get()),
            code_challenge=app.verifier,
            code_challenge_method="plain",
        ),
    )

    assert query_of(response["Location"])["error"] == "invalid_request"


def test_a_wrong_verifier_is_refused_with_invalid_grant(alice_client, alice):
    app = public_client(alice_client)
    code = approve(alice_client, app, endpoint_resource(alice.endpoints.get()))

    response = exchange(alice_client, app, code, code_verifier="x" * 64)

    assert (response.status_code, response.json()["error"]) == (400, "invalid_grant")
    assert not AccessToken.objects.filter(scope="mcp").exists()


def test_a_replayed_code_is_refused_with_invalid_grant(alice_client, alice):
    app = public_client(alice_client)
    code = approve(alice_client, app, endpoint_resource(alice.endpoints.get()))

    first = exchange(alice_client, app, code)
    replay = exchange(alice_client, app, code)

    assert first.status_code == 200 and first.json()["access_token"].startswith("mcphub_oat_")
    assert (replay.status_code, replay.json()["error"]) == (400, "invalid_grant")


def test_a_replayed_code_revokes_the_tokens_it_was_exchanged_for_and_their_rotations(
    alice_client, alice
):
    app = public_client(alice_client)
    endpoint = endpoint_resource(alice.endpoints.get())
    code = approve(alice_client, app, endpoint)
    tokens = exchange(alice_client, app, code).json()
    refresh = {"grant_type": "refresh_token", "client_id": app.client_id}
    rotated = alice_client.post(
        "/oauth/token/", {**refresh, "refresh_token": tokens["refresh_token"]}
    ).json()
    other = exchange(
        alice_client, app, approve(alice_client, app, endpoint)
    ).json()  # another code: untouched

    replay = exchange(alice_client, app, code)

    assert (replay.status_code, replay.json()["error"]) == (400, "invalid_grant")
    assert (
        access_grant(tokens["access_token"]) is None
        and access_grant(rotated["access_token"]) is None
    )
    again = alice_client.post(
        "/oauth/token/", {**refresh, "refresh_token": rotated["refresh_token"]}
    )
    assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")
    assert access_grant(other["access_token"]) is not None
    assert (
        alice_client.post(
            "/oauth/token/", {**refresh, "refresh_token": other["refresh_token"]}
        ).status_code
        == 200
    )


def test_a_redeemed_code_is_remembered_as_a_checksum_until_the_hourly_sweep_after_it_expires(
    alice_client, alice
):
    app = public_client(alice_client)
    code = approve(alice_client, app, endpoint_resource(alice.endpoints.get()))
    exchange(alice_client, app, code)

    remembered = RedeemedCode.objects.get()
    clear_expired()
    kept = RedeemedCode.objects.exists()
    RedeemedCode.objects.update(expires=timezone.now() - timedelta(seconds=1))
    clear_expired()

    assert (
        code not in remembered.code_checksum
        and len(remembered.code_checksum) == 64
        and remembered.token_family
    )
    assert kept and not RedeemedCode.objects.exists()


def test_a_code_replayed_under_another_client_revokes_too(alice_client, alice):
    app, thief = public_client(alice_client), public_client(alice_client)
    code = approve(alice_client, app, endpoint_resource(alice.endpoints.get()))
    tokens = exchange(alice_client, app, code).json()

    replay = exchange(alice_client, thief, code, code_verifier=app.verifier)

    assert (replay.status_code, replay.json()["error"]) == (400, "invalid_grant")
    assert access_grant(tokens["access_token"]) is None


def test_a_code_is_bound_to_its_client(alice_client, alice):
    app, other = public_client(alice_client), public_client(alice_client)
    code = approve(alice_client, app, endpoint_resource(alice.endpoints.get()))

    response = exchange(alice_client, other, code, code_verifier=app.verifier)

    assert (response.status_code, response.json()["error"]) == (400, "invalid_grant")


def test_an_unknown_client_is_refused_with_invalid_client(client):
    response = client.post(
        "/oauth/token/",
        {
            "grant_type": "authorization_code",
            "code": "x",
            "redirect_uri": CALLBACK,
            "client_id": "nobody",
            "code_verifier": "x" * 64,
        },
    )

    assert (response.status_code, response.json()["error"]) == (401, "invalid_client")


def test_the_resource_is_required(alice_client):
    app = public_client(alice_client)

    response = alice_client.get("/oauth/authorize/", authorize_params(app, None))

    assert query_of(response["Location"])["error"] == "invalid_request"


@pytest.mark.parametrize("whose", ["bob", "elsewhere", "not-an-endpoint"])
def test_the_resource_must_be_one_of_the_users_own_endpoints(alice_client, bob, whose):
    app = public_client(alice_client)
    resource = {
        "bob": endpoint_resource(bob.endpoints.get()),
        "elsewhere": "https://other.example/mcp/alice-endpoint/",
        "not-an-endpoint": "http://testserver/api/servers/",
    }[whose]

    response = alice_client.get("/oauth/authorize/", authorize_params(app, resource))

    assert query_of(response["Location"])["error"] == "invalid_target"


def test_a_tampered_resource_on_the_consent_form_is_refused(alice_client, alice, bob):
    app = public_client(alice_client)
    page = alice_client.get(
        "/oauth/authorize/", authorize_params(app, endpoint_resource(alice.endpoints.get()))
    )
    form = {
        **consent_fields(page.content.decode()),
        "allow": "Authorize",
        "resource": endpoint_resource(bob.endpoints.get()),
    }
    response = alice_client.post("/oauth/authorize/", form)

    assert query_of(response["Location"])["error"] == "invalid_target"
    assert "code" not in query_of(response["Location"])


def test_denying_consent_sends_access_denied(alice_client, alice):
    app = public_client(alice_client)
    page = alice_client.get(
        "/oauth/authorize/", authorize_params(app, endpoint_resource(alice.endpoints.get()))
    )
    response = alice_client.post("/oauth/authorize/", consent_fields(page.content.decode()))

    assert query_of(response["Location"])["error"] == "access_denied"


def test_a_replayed_refresh_token_is_refused_and_revokes_the_grant(alice_client, alice):
    app = public_client(alice_client)
    tokens = exchange(
        alice_client, app, approve(alice_client, app, endpoint_resource(alice.endpoints.get()))
    ).json()
    refresh = {"grant_type": "refresh_token", "client_id": app.client_id}

    rotated = alice_client.post(
        "/oauth/token/", {**refresh, "refresh_token": tokens["refresh_token"]}
    )
    replay = alice_client.post(
        "/oauth/token/", {**refresh, "refresh_token": tokens["refresh_token"]}
    )
    after = alice_client.post(
        "/oauth/token/", {**refresh, "refresh_token": rotated.json()["refresh_token"]}
    )

    assert rotated.status_code == 200 and rotated.json()["refresh_token"] != tokens["refresh_token"]
    assert (replay.status_code, replay.json()["error"]) == (400, "invalid_grant")
    assert (after.status_code, after.json()["error"]) == (
        400,
        "invalid_grant",
    )  # the whole family is gone


def test_a_token_request_cannot_widen_the_audience(alice_client, alice, bob):
    app = public_client(alice_client)
    code = approve(alice_client, app, endpoint_resource(alice.endpoints.get()))

    response = exchange(alice_client, app, code, resource=endpoint_resource(bob.endpoints.get()))

    assert (response.status_code, response.json()["error"]) == (400, "invalid_target")


def test_issued_tokens_are_short_lived_and_bound_to_the_endpoint(alice_client, alice):
    app = public_client(alice_client)
    endpoint = alice.endpoints.get()

    body = exchange(
        alice_client, app, approve(alice_client, app, endpoint_resource(endpoint))
    ).json()

    assert body["token_type"] == "Bearer" and body["expires_in"] == 3600 and body["scope"] == "mcp"
    token = AccessToken.objects.get(scope="mcp")
    assert token.resource == [endpoint_resource(endpoint)]
    assert token.token == ""  # stored as a checksum only


def test_browser_clients_may_discover_register_and_exchange_cross_origin(client):
    preflight = client.options(
        "/oauth/token/",
        HTTP_ORIGIN="https://inspector.example",
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="content-type",
    )
    metadata = client.get(
        "/.well-known/oauth-authorization-server", HTTP_ORIGIN="https://inspector.example"
    )
    status, _ = register(client)

    assert preflight.status_code == 204 and preflight["Access-Control-Allow-Origin"] == "*"
    assert "MCP-Protocol-Version" in preflight["Access-Control-Allow-Headers"]
    assert metadata["Access-Control-Allow-Origin"] == "*" and status == 201
    consent = client.options(
        "/oauth/authorize/",
        HTTP_ORIGIN="https://evil.example",
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
    )
    assert "Access-Control-Allow-Origin" not in consent


def test_oauth_tokens_never_reach_a_log_line():
    from apps.accounts.tokens import redact
    from apps.oauth.tokens import generate_access_token, generate_refresh_token

    access, refresh = generate_access_token(), generate_refresh_token()

    line = redact(f"Authorization: Bearer {access} refresh_token={refresh}")

    assert access not in line and refresh not in line
    assert line == "Authorization: Bearer mcphub_oat_… refresh_token=mcphub_ort_…"


def test_a_tampered_redirect_uri_on_the_consent_form_is_never_followed(alice_client, alice, bob):
    app = public_client(alice_client)
    page = alice_client.get(
        "/oauth/authorize/", authorize_params(app, endpoint_resource(alice.endpoints.get()))
    )
    form = {
        **consent_fields(page.content.decode()),
        "allow": "Authorize",
        "resource": endpoint_resource(bob.endpoints.get()),
        "redirect_uri": "https://evil.example/steal",
    }

    response = alice_client.post("/oauth/authorize/", form)

    assert response.status_code == 400 and "Location" not in response
    assert b"invalid_target" in response.content
