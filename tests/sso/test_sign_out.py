"""Signing out where one signed in: the hub's sign-out also signs out at the provider
(RP-Initiated Logout 1.0), and a provider's back-channel logout may name only its session (`sid`)."""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qs, urljoin, urlsplit

import jwt
import pytest
import requests
from django.test import Client

from apps.accounts.models import SsoSession
from tests.sso.conftest import CLIENT_ID, sign_in
from tests.sso.test_sign_in import CAROL, signed_in_user

pytestmark = pytest.mark.django_db(transaction=True)


def test_signing_out_of_the_hub_signs_out_at_the_provider_too(client, idp):
    idp.accounts(carol=CAROL)
    at_provider = requests.Session()  # carol's browser, as the provider knows it
    sign_in(client, "carol", browser=at_provider)

    page = client.post("/logout/")

    assert page.status_code == 200 and signed_in_user(client) is None
    found = re.search(r'id="continue-sign-out" href="([^"]+)"', page.content.decode())
    url = html.unescape(found.group(1))
    assert url.startswith(f"{idp.issuer}/session/end?")
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    assert query["client_id"] == CLIENT_ID
    assert query["post_logout_redirect_uri"] == "http://testserver/login/"
    hint = jwt.decode(query["id_token_hint"], options={"verify_signature": False})
    assert (hint["sub"], hint["aud"]) == ("carol", CLIENT_ID)

    asked = at_provider.get(url, allow_redirects=False, timeout=10)  # "sign out from …?"
    action = re.search(r'action="([^"]+)"', asked.text).group(1)
    xsrf = re.search(r'name="xsrf" value="([^"]+)"', asked.text).group(1)
    done = at_provider.post(
        urljoin(url, action), data={"xsrf": xsrf, "logout": "yes"}, allow_redirects=False
    )
    assert done.headers["Location"].startswith("http://testserver/login/")

    # Signed out there too: the next sign-in asks who she is again.
    start = client.post("/sso/oidc/acme/login/")
    response = at_provider.get(start["Location"], allow_redirects=True, timeout=10)
    assert 'name="login"' in response.text


def test_a_password_session_signs_out_as_before(client, alice):
    client.force_login(alice)

    response = client.post("/logout/")

    assert response.status_code == 302 and response["Location"] == "/login/"


def test_a_back_channel_logout_naming_only_the_session_ends_that_session(idp):
    idp.accounts(carol=CAROL)
    laptop, phone, provider = Client(), Client(), Client()
    sign_in(laptop, "carol")
    sign_in(phone, "carol")  # another browser: another session at the provider
    sid = SsoSession.objects.get(session_key=laptop.session.session_key).sid
    assert SsoSession.objects.get(session_key=phone.session.session_key).sid != sid

    response = provider.post(
        "/sso/oidc/acme/backchannel-logout/", {"logout_token": idp.logout_token(sid=sid)}
    )

    assert response.status_code == 200
    assert signed_in_user(laptop) is None and laptop.get("/").status_code == 302
    assert signed_in_user(phone).username == "carol" and phone.get("/").status_code == 200
    assert not SsoSession.objects.filter(sid=sid).exists()


def test_a_logout_token_for_someone_else_in_that_session_ends_nothing(idp):
    idp.accounts(carol=CAROL)
    laptop = Client()
    sign_in(laptop, "carol")
    sid = SsoSession.objects.get().sid

    mismatch = Client().post(
        "/sso/oidc/acme/backchannel-logout/",
        {"logout_token": idp.logout_token("mallory", sid=sid)},
    )
    nobody = Client().post(
        "/sso/oidc/acme/backchannel-logout/", {"logout_token": idp.logout_token()}
    )

    assert mismatch.status_code == 200 and nobody.status_code == 400
    assert signed_in_user(laptop).username == "carol"
