"""A hand-driven OAuth client over Django's test client, for the refusals the SDK never provokes."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from django.test import Client

from tests.oauth.flow import consent_fields

CALLBACK = "http://127.0.0.1:43210/callback"
ORIGIN = "http://testserver"


def challenge_of(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


def query_of(location: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


@dataclass
class Registered:
    client_id: str
    verifier: str


def register(client: Client, **metadata) -> tuple[int, dict]:
    body = {
        "client_name": "Hand Client",
        "redirect_uris": [CALLBACK],
        "token_endpoint_auth_method": "none",
        **metadata,
    }
    response = client.post("/oauth/register/", json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def public_client(client: Client) -> Registered:
    status, body = register(client)
    assert status == 201, body
    return Registered(body["client_id"], secrets.token_urlsafe(48))


def authorize_params(app: Registered, resource: str | None, **overrides) -> dict[str, str]:
    params = {
        "response_type": "code",
        "client_id": app.client_id,
        "redirect_uri": CALLBACK,
        "state": "st4te",
        "code_challenge": challenge_of(app.verifier),
        "code_challenge_method": "S256",
        "scope": "mcp",
    }
    if resource is not None:
        params["resource"] = resource
    params.update(overrides)
    return {k: v for k, v in params.items() if v is not None}


def approve(client: Client, app: Registered, resource: str, **overrides) -> str:
    """Open the consent page as the signed-in user and allow; the code from the redirect."""
    page = client.get("/oauth/authorize/", authorize_params(app, resource, **overrides))
    assert page.status_code == 200, page.content[:400]
    form = consent_fields(page.content.decode())
    response = client.post(
        "/oauth/authorize/?" + page.wsgi_request.META["QUERY_STRING"],
        {**form, "allow": "Authorize"},
    )
    assert response.status_code == 302
    return query_of(response["Location"])["code"]


def exchange(client: Client, app: Registered, code: str, **overrides):
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": CALLBACK,
        "client_id": app.client_id,
        "code_verifier": app.verifier,
        **overrides,
    }
    return client.post("/oauth/token/", {k: v for k, v in data.items() if v is not None})


def endpoint_resource(endpoint) -> str:
    return f"{ORIGIN}{endpoint.path}"
