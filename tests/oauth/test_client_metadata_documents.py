"""A client may name itself by the URL of its metadata document (CIMD) instead of registering.
The hub fetches it (https only in production; loopback http only where the setting allows it)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from oauth2_provider.models import Application

from tests.oauth.flow import consent_fields
from tests.oauth.oauth_client import (
    CALLBACK,
    Registered,
    authorize_params,
    endpoint_resource,
    exchange,
    query_of,
)

pytestmark = pytest.mark.django_db


class _Documents(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.documents: dict[str, bytes] = {}
        self.hits: list[str] = []

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.hits.append(self.path)
        body = self.server.documents.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body or b"{}")

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def documents():
    server = _Documents()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def loopback_allowed(settings):
    settings.MCPHUB_OAUTH_CIMD_ALLOW_LOOPBACK_HTTP = True


def publish(documents: _Documents, path: str, **metadata) -> str:
    client_id = documents.url(path)
    document = {
        "client_id": client_id,
        "client_name": "Docs Client",
        "redirect_uris": [CALLBACK],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **metadata,
    }
    documents.documents[path] = json.dumps(document).encode()
    return client_id


def test_a_client_named_by_its_document_gets_consent_and_tokens(
    client, alice, documents, loopback_allowed
):
    client.force_login(alice)
    app = Registered(publish(documents, "/oauth/client.json"), "v" * 64)
    resource = endpoint_resource(alice.endpoints.get())

    page = client.get("/oauth/authorize/", authorize_params(app, resource))

    assert page.status_code == 200
    html = page.content.decode()
    assert "Docs Client" in html and "metadata document" in html and app.client_id in html
    approved = client.post("/oauth/authorize/", {**consent_fields(html), "allow": "Authorize"})
    tokens = exchange(client, app, query_of(approved["Location"])["code"])
    assert tokens.status_code == 200 and tokens.json()["access_token"].startswith("mcphub_oat_")
    assert Application.objects.get(client_id=app.client_id).registration_source == "cimd"
    assert documents.hits == ["/oauth/client.json"]  # fetched once, then kept


def test_without_the_setting_a_loopback_http_document_is_never_fetched(
    client, alice, documents, settings
):
    settings.MCPHUB_OAUTH_CIMD_ALLOW_LOOPBACK_HTTP = False
    client.force_login(alice)
    app = Registered(publish(documents, "/oauth/client.json"), "v" * 64)

    page = client.get(
        "/oauth/authorize/", authorize_params(app, endpoint_resource(alice.endpoints.get()))
    )

    assert page.status_code == 400 and "Location" not in page  # an unknown client: no redirect
    assert documents.hits == []
    assert not Application.objects.exists()


@pytest.mark.parametrize(
    "problem",
    ["another-client-id", "oversized", "secret", "plain-http-redirect"],
)
def test_a_bad_document_leaves_the_client_unknown(
    client, alice, documents, loopback_allowed, problem
):
    client.force_login(alice)
    path = f"/{problem}.json"
    extra = {
        "another-client-id": {"client_id": "https://elsewhere.example/client.json"},
        "oversized": {"padding": "x" * 20_000},
        "secret": {"client_secret": "s3cret"},
        "plain-http-redirect": {"redirect_uris": [CALLBACK, "http://evil.example/cb"]},
    }[problem]
    app = Registered(publish(documents, path, **extra), "v" * 64)

    page = client.get(
        "/oauth/authorize/", authorize_params(app, endpoint_resource(alice.endpoints.get()))
    )

    assert page.status_code == 400 and "Location" not in page
    assert documents.hits == [path]
    assert not Application.objects.exists()
