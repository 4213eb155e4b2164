"""The consent page: reached after signing in, it says who asks for which endpoint, and lets its
answer travel to the client's redirect URI (and nowhere else) under the pages' CSP."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from tests.oauth.oauth_client import authorize_params, endpoint_resource, public_client, register

pytestmark = pytest.mark.django_db


def test_a_signed_out_person_signs_in_first_and_comes_back(client, alice):
    app = public_client(client)
    path = "/oauth/authorize/?" + urlencode(
        authorize_params(app, endpoint_resource(alice.endpoints.get()))
    )

    first = client.get(path)
    signed_in = client.post(
        first["Location"], {"username": "alice", "password": "alice-password", "next": path}
    )

    assert first.status_code == 302 and first["Location"].startswith("/login/?next=")
    assert signed_in.status_code == 302 and signed_in["Location"] == path
    page = client.get(path)
    assert page.status_code == 200 and b'id="client-name">Hand Client</span>?' in page.content


def test_the_page_names_the_client_the_endpoint_and_the_grant(client, alice):
    client.force_login(alice)
    app = public_client(client)
    endpoint = alice.endpoints.get()

    page = client.get("/oauth/authorize/", authorize_params(app, endpoint_resource(endpoint)))

    html = page.content.decode()
    assert 'Connect <span id="client-name">Hand Client</span>?' in html
    assert (
        f'<strong id="consent-endpoint">{endpoint.name}</strong>' in html
        and endpoint_resource(endpoint) in html
    )
    assert (
        "Use the tools enabled on this endpoint" in html
        and "has not verified this application" in html
    )
    assert "form-action 'self' http://127.0.0.1:43210" in page["Content-Security-Policy"]


def test_a_native_apps_scheme_is_allowed_as_form_action(client, alice):
    client.force_login(alice)
    status, body = register(
        client, redirect_uris=["cursor://anysphere.cursor-retrieval/oauth/callback"]
    )
    assert status == 201
    params = {
        "response_type": "code",
        "client_id": body["client_id"],
        "redirect_uri": "cursor://anysphere.cursor-retrieval/oauth/callback",
        "code_challenge": "a" * 43,
        "code_challenge_method": "S256",
        "resource": endpoint_resource(alice.endpoints.get()),
    }

    page = client.get("/oauth/authorize/", params)

    assert page.status_code == 200
    assert "form-action 'self' cursor:" in page["Content-Security-Policy"]
