"""Sign-in through a real OpenID Connect provider: accounts, groups → teams and roles, refusals."""

from __future__ import annotations

import pytest
from auditlog.models import LogEntry
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from apps.accounts.models import Membership, SsoProvider, Team, User
from apps.accounts.services import authenticate_token, create_access_token
from apps.accounts.sso import config
from tests.sso.conftest import CLIENT_ID, CLIENT_SECRET, sign_in

pytestmark = pytest.mark.django_db(transaction=True)

CAROL = {
    "email": "carol@acme.test",
    "email_verified": True,
    "preferred_username": "carol",
    "name": "Carol",
    "groups": ["eng", "eng-leads", "hub-admins"],
}


def signed_in_user(client) -> User | None:
    user_id = client.session.get("_auth_user_id")
    return User.objects.filter(pk=user_id).first() if user_id else None


def roles(user: User) -> dict[str, str]:
    return dict(user.memberships.values_list("team__name", "role"))


def test_first_sign_in_creates_the_account_with_its_teams_and_roles(client, idp):
    idp.accounts(carol=CAROL)
    response = sign_in(client, "carol")
    assert response.status_code == 302 and response["Location"] == "/"
    carol = signed_in_user(client)
    assert (carol.username, carol.email, carol.is_staff) == ("carol", "carol@acme.test", True)
    assert not carol.has_usable_password()
    assert roles(carol) == {"Engineering": "admin"}
    assert client.get("/").status_code == 200
    sources = {
        (e.content_type.model, (e.additional_data or {}).get("source"))
        for e in LogEntry.objects.all()
    }
    assert {("team", "sso"), ("membership", "sso")} <= sources


def test_memberships_and_staff_follow_the_provider_at_every_sign_in(client, idp):
    idp.accounts(carol=CAROL)
    sign_in(client, "carol")
    carol = User.objects.get(username="carol")
    team = Team.objects.get(name="Engineering")
    manual = Team.objects.create(name="Book club", slug="book-club")
    Membership.objects.create(team=manual, user=carol)

    idp.accounts(carol={**CAROL, "groups": ["eng", "ops"]})
    client.logout()
    sign_in(client, "carol")
    carol.refresh_from_db()
    assert roles(carol) == {"Engineering": "member", "Ops": "member", "Book club": "member"}
    assert not carol.is_staff
    assert Team.objects.filter(name="Engineering").get() == team  # the same team, not a new one

    idp.accounts(carol={**CAROL, "groups": []})
    client.logout()
    sign_in(client, "carol")
    assert roles(carol) == {"Book club": "member"}  # teams the mapping does not name stay
    removal = LogEntry.objects.filter(action=LogEntry.Action.DELETE).latest("pk")
    assert removal.additional_data["source"] == "sso"


def test_a_verified_email_links_an_existing_account(client, idp, alice):
    idp.accounts(a1={"email": "ALICE@example.com", "email_verified": True, "groups": ["ops"]})
    sign_in(client, "a1")
    assert signed_in_user(client) == alice
    assert roles(alice) == {"Ops": "member"}
    assert User.objects.count() == 1


def test_an_unverified_email_never_links_an_account(client, idp, alice):
    idp.accounts(mallory={"email": "alice@example.com", "email_verified": False, "groups": ["ops"]})
    response = sign_in(client, "mallory")
    assert response.status_code == 403
    assert b"does not vouch for that email" in response.content
    assert signed_in_user(client) is None
    assert User.objects.count() == 1 and not Team.objects.exists()


def test_a_username_taken_locally_gets_a_free_one(client, idp, alice):
    idp.accounts(
        other={"preferred_username": "alice", "email": "a@acme.test", "email_verified": True}
    )
    sign_in(client, "other")
    assert signed_in_user(client).username == "alice-2"


def test_a_user_disabled_at_the_provider_is_refused(client, idp):
    idp.accounts(carol={**CAROL, "disabled": True})
    response = sign_in(client, "carol")
    assert response.status_code == 403
    assert signed_in_user(client) is None and not User.objects.exists()


@pytest.mark.parametrize("mode", ["signature", "nonce"])
def test_a_tampered_id_token_or_a_wrong_nonce_is_refused(client, idp, mode):
    idp.accounts(carol={**CAROL, "groups": ["eng"]})
    idp.tamper(mode)
    response = sign_in(client, "carol")
    assert response.status_code == 403, response.content
    assert b"Sign-in refused" in response.content
    assert signed_in_user(client) is None
    assert not User.objects.exists() and not Membership.objects.exists()
    idp.tamper(None)
    sign_in(client, "carol")
    assert signed_in_user(client).username == "carol"


def test_an_account_deactivated_in_the_hub_is_refused_and_its_tokens_with_it(client, idp):
    idp.accounts(carol=CAROL)
    sign_in(client, "carol")
    carol = signed_in_user(client)
    _, raw = create_access_token(user=carol, name="laptop")
    assert authenticate_token(raw) is not None

    carol.is_active = False
    carol.save()  # what the admin's "active" checkbox does
    assert authenticate_token(raw) is None
    assert client.get("/")["Location"].startswith("/login/")  # the session ended
    response = sign_in(client, "carol")
    assert response.status_code == 403 and b"deactivated" in response.content
    assert client.get("/")["Location"].startswith("/login/")


def test_a_back_channel_logout_ends_the_persons_sessions(client, idp):
    idp.accounts(carol=CAROL)
    sign_in(client, "carol")
    assert client.get("/").status_code == 200
    other = client.__class__()
    response = other.post(
        "/sso/oidc/acme/backchannel-logout/", {"logout_token": idp.logout_token("carol")}
    )
    assert response.status_code == 200
    assert client.get("/").status_code == 302

    forged = idp.logout_token("carol")[:-4] + "AAAA"
    response = other.post("/sso/oidc/acme/backchannel-logout/", {"logout_token": forged})
    assert response.status_code == 400


def test_a_provider_added_in_the_admin_signs_in_with_its_secret_encrypted(client, idp, settings):
    settings.MCPHUB_SSO_PROVIDERS = []
    SsoProvider.objects.create(
        slug="admin-made",
        name="Admin-made ID",
        issuer=idp.issuer,
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        scopes="openid profile email groups",
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT client_secret FROM accounts_ssoprovider")
        assert CLIENT_SECRET not in cursor.fetchone()[0]
    assert "Sign in with Admin-made ID" in client.get("/login/").content.decode()
    idp.accounts(carol=CAROL)
    sign_in(client, "carol", slug="admin-made")
    assert signed_in_user(client).username == "carol"
    SsoProvider.objects.update(enabled=False)
    assert client.post("/sso/oidc/admin-made/login/").status_code == 404


def test_sso_only_closes_password_sign_in_but_for_break_glass_accounts(
    client, idp, settings, alice, bob
):
    settings.MCPHUB_SSO_ONLY = True
    settings.MCPHUB_SSO_BREAK_GLASS = ["bob"]
    page = client.get("/login/").content.decode()
    assert "Sign in with Acme ID" in page and 'name="password"' not in page
    response = client.post("/login/", {"username": "alice", "password": "alice-password"})
    assert response.status_code == 200 and signed_in_user(client) is None
    assert "break-glass accounts only" in response.content.decode()
    assert 'name="password"' in client.get("/login/?break-glass").content.decode()
    client.post("/login/", {"username": "bob", "password": "bob-password"})
    assert signed_in_user(client) == bob


def test_a_bad_team_mapping_is_reported_clearly(settings):
    settings.MCPHUB_SSO_TEAMS = ["eng=Engineering:owner"]
    with pytest.raises(ImproperlyConfigured, match="group=Team name:admin"):
        config.team_mapping()
    assert [e.id for e in config.check_settings()] == ["accounts.E001"]


def test_email_domains_admit_only_verified_emails_of_those_domains(client, idp, settings):
    settings.MCPHUB_SSO_EMAIL_DOMAINS = ["acme.test"]
    idp.accounts(
        eve={"email": "eve@gmail.test", "email_verified": True},
        fake={"email": "fake@acme.test", "email_verified": False},
        carol=CAROL,
    )
    for who in ("eve", "fake"):
        response = sign_in(client, who)
        assert response.status_code == 403 and b"acme.test only" in response.content
    assert not User.objects.exists()
    sign_in(client, "carol")
    assert signed_in_user(client).username == "carol"


def test_a_sign_in_starts_only_from_the_sign_in_pages_post(client, idp):
    response = client.get("/sso/oidc/acme/login/")
    assert response.status_code == 302 and response["Location"] == "/login/"
    assert client.post("/sso/oidc/nowhere/login/").status_code == 404
    response = client.get("/sso/oidc/acme/login/callback/?code=x&state=forged")
    assert response.status_code == 403 and b"Sign-in refused" in response.content


def test_a_session_ends_at_its_next_check_once_the_provider_disables_the_person(
    client, idp, settings
):
    idp.accounts(carol=CAROL)
    sign_in(client, "carol")
    settings.MCPHUB_SSO_CHECK_SECONDS = 0
    assert client.get("/").status_code == 200  # checked: the provider refreshed the tokens
    assert client.get("/").status_code == 200  # with the rotated refresh token

    idp.accounts(carol={**CAROL, "disabled": True})
    assert client.get("/")["Location"].startswith("/login/")
    assert sign_in(client, "carol").status_code == 403
    assert client.get("/").status_code == 302


def test_an_unreachable_provider_ends_no_session(client, idp, settings):
    idp.accounts(carol=CAROL)
    sign_in(client, "carol")
    settings.MCPHUB_SSO_CHECK_SECONDS = 0
    idp.stop()
    assert client.get("/").status_code == 200


def test_an_unreachable_or_wrong_provider_is_a_clear_refusal(client, idp, settings):
    # The same provider under another name: its discovery document names another issuer.
    elsewhere = idp.issuer.replace("127.0.0.1", "localhost")
    settings.MCPHUB_SSO_PROVIDERS = [{**idp.setting(), "issuer": elsewhere}]
    response = client.post("/sso/oidc/acme/login/")
    assert response.status_code == 502 and b"not set up right" in response.content
    settings.MCPHUB_SSO_PROVIDERS = [idp.setting()]
    idp.stop()
    response = client.post("/sso/oidc/acme/login/")
    assert response.status_code == 502 and b"cannot be reached" in response.content
