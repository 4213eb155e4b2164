"""Sign-in with a GitHub OAuth app (allauth's GitHub provider), against a stand-in for GitHub."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from allauth.socialaccount.providers.github.views import GitHubOAuth2Adapter

from apps.accounts.models import Membership, Team, User

pytestmark = pytest.mark.django_db(transaction=True)


class FakeGitHub(BaseHTTPRequestHandler):
    emails: list[dict] = []

    def log_message(self, *args) -> None:
        pass

    def _json(self, body) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/login/oauth/authorize":  # the person says yes at once
            query = parse_qs(url.query)
            back = (
                query["redirect_uri"][0]
                + "?"
                + urlencode({"code": "the-code", "state": query["state"][0]})
            )
            self.send_response(302)
            self.send_header("Location", back)
            self.end_headers()
        elif url.path == "/user":
            self._json({"id": 4242, "login": "octo", "name": "Octo Cat"})
        elif url.path == "/user/emails":
            self._json(self.emails)
        else:
            self.send_error(404)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._json({"access_token": "gho_test", "token_type": "bearer", "scope": "user:email"})


@pytest.fixture
def github(settings, monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeGitHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    for name, path in (
        ("authorize_url", "/login/oauth/authorize"),
        ("access_token_url", "/login/oauth/access_token"),
        ("profile_url", "/user"),
        ("emails_url", "/user/emails"),
    ):
        monkeypatch.setattr(GitHubOAuth2Adapter, name, base + path)
    settings.MCPHUB_SSO_GITHUB = {"client_id": "Iv1.test", "client_secret": "s", "name": "GitHub"}
    settings.MCPHUB_SSO_TEAMS = ["eng=Engineering"]
    yield FakeGitHub
    server.shutdown()


def sign_in_with_github(client):
    start = client.post("/sso/github/login/")
    assert start.status_code == 302, start.content
    answer = requests.get(start["Location"], allow_redirects=False, timeout=10)
    back = urlsplit(answer.headers["Location"])
    return client.get(f"{back.path}?{back.query}")


def test_github_signs_in_by_its_login_and_links_only_a_verified_email(client, github, alice):
    assert "Sign in with GitHub" in client.get("/login/").content.decode()
    github.emails = [{"email": "alice@example.com", "primary": True, "verified": False}]
    response = sign_in_with_github(client)
    assert response.status_code == 403 and b"does not vouch" in response.content

    github.emails = [{"email": "alice@example.com", "primary": True, "verified": True}]
    response = sign_in_with_github(client)
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(alice.pk)


def test_a_github_sign_in_leaves_team_memberships_alone(client, github):
    github.emails = [{"email": "octo@acme.test", "primary": True, "verified": True}]
    sign_in_with_github(client)
    octo = User.objects.get(username="octo")
    team = Team.objects.create(name="Engineering", slug="engineering")
    Membership.objects.create(team=team, user=octo)
    client.logout()
    sign_in_with_github(client)
    assert octo.memberships.count() == 1
