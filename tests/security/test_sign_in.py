"""Sign-in cannot be guessed at full speed: failures lock the account at that address, and an
address guessing across many accounts, with a clear message; an admin unlocks; nobody can lock
someone else out. Pages carry the security headers a Django deployment should send."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from axes.models import AccessAttempt
from django.conf import settings
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]


def sign_in(client: Client, username: str, password: str, address: str = "203.0.113.7"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def fail(username: str, times: int, address: str, **headers) -> None:
    for _ in range(times):
        assert sign_in(Client(**headers), username, "guess", address).status_code in (200, 429)


def test_failed_sign_ins_lock_the_account_at_that_address_until_an_admin_unlocks_it(
    client, alice, admin_user
):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert (
            sign_in(client, "alice", "guess").status_code == 200
        )  # the form again, with its error
    locked = sign_in(client, "alice", "guess")

    assert locked.status_code == 429
    assert "Too many failed sign-ins" in locked.content.decode()
    assert "ask an administrator to unlock it" in locked.content.decode()
    # now even the right password, from that address, is refused; from another address alice signs in
    assert sign_in(Client(), "alice", "alice-password").status_code == 429
    assert sign_in(Client(), "alice", "alice-password", address="198.51.100.2").status_code == 302

    admin = Client()
    admin.force_login(admin_user)
    attempts = list(AccessAttempt.objects.filter(username="alice").values_list("pk", flat=True))
    unlocked = admin.post(
        "/admin/axes/accessattempt/",
        {"action": "delete_selected", "_selected_action": attempts, "post": "yes"},
    )
    assert unlocked.status_code == 302

    assert sign_in(Client(), "alice", "alice-password").status_code == 302


def test_nobody_locks_alice_out_from_elsewhere_or_from_her_own_address(alice, bob):
    fail(
        "alice", settings.AXES_FAILURE_LIMIT * 3, address="192.0.2.66"
    )  # a stranger guessing her password
    fail(
        "bob", settings.AXES_FAILURE_LIMIT * 3, address="203.0.113.7"
    )  # bob, behind the same proxy as alice

    assert sign_in(Client(), "alice", "alice-password", address="203.0.113.7").status_code == 302
    assert sign_in(Client(), "alice", "alice-password", address="198.51.100.2").status_code == 302


def test_one_address_guessing_across_many_accounts_is_locked_at_ten_times_the_limit(alice, bob):
    names = [f"user{n}" for n in range(settings.MCPHUB_SIGNIN_ADDRESS_FAILURE_LIMIT)]
    for name in names[:-1]:
        fail(name, 1, address="192.0.2.9")
    assert (
        sign_in(Client(), "alice", "alice-password", address="192.0.2.9").status_code == 302
    )  # not yet

    fail(names[-1], 1, address="192.0.2.9")

    assert settings.MCPHUB_SIGNIN_ADDRESS_FAILURE_LIMIT == 10 * settings.AXES_FAILURE_LIMIT
    assert sign_in(Client(), "bob", "bob-password", address="192.0.2.9").status_code == 429
    assert sign_in(Client(), "bob", "bob-password", address="192.0.2.10").status_code == 302


def test_signing_in_oneself_does_not_clear_the_addresss_failures(alice, bob):
    for n in range(settings.MCPHUB_SIGNIN_ADDRESS_FAILURE_LIMIT - 1):
        fail(f"user{n}", 1, address="192.0.2.9")

    assert (
        sign_in(Client(), "bob", "bob-password", address="192.0.2.9").status_code == 302
    )  # the guesser's own account
    fail("one-more", 1, address="192.0.2.9")

    assert sign_in(Client(), "alice", "alice-password", address="192.0.2.9").status_code == 429


def test_a_spoofed_x_forwarded_for_changes_nothing_without_a_trusted_proxy(alice):
    for n in range(settings.AXES_FAILURE_LIMIT):
        fail("alice", 1, address="203.0.113.7", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}")

    assert (
        sign_in(Client(HTTP_X_FORWARDED_FOR="198.51.100.99"), "alice", "alice-password").status_code
        == 429
    )
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.7"}


def test_behind_a_trusted_proxy_the_address_it_saw_counts(alice, settings):
    settings.MCPHUB_TRUSTED_PROXIES = 1
    proxy = "10.0.0.2"
    # The client wrote the first entry itself; the proxy appended the address it received from.
    for _ in range(settings.AXES_FAILURE_LIMIT):
        fail("alice", 1, address=proxy, HTTP_X_FORWARDED_FOR="192.0.2.200, 203.0.113.50")

    assert (
        sign_in(
            Client(HTTP_X_FORWARDED_FOR="203.0.113.50"), "alice", "alice-password", address=proxy
        ).status_code
        == 429
    )
    assert (
        sign_in(
            Client(HTTP_X_FORWARDED_FOR="192.0.2.200"), "alice", "alice-password", address=proxy
        ).status_code
        == 302
    )
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.50"}


def test_pages_send_a_strict_content_security_policy_and_refuse_framing(client, alice):
    client.force_login(alice)

    response = client.get("/")

    policy = response["Content-Security-Policy"]
    assert (
        "script-src 'self'" in policy
        and "frame-ancestors 'none'" in policy
        and "'unsafe-eval'" not in policy
    )
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_no_page_template_carries_an_inline_script_or_handler():
    offenders = []
    for template in (ROOT / "templates").rglob("*.html"):
        text = template.read_text()
        for needle in ("onclick=", "onchange=", "onsubmit=", "oninput=", "javascript:"):
            if needle in text:
                offenders.append(f"{template.relative_to(ROOT)}: {needle}")
        offenders += [
            f"{template.relative_to(ROOT)}: inline <script>"
            for line in text.splitlines()
            if "<script" in line and "src=" not in line and 'type="application/json"' not in line
        ]
    assert offenders == []


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST")},
        "SECRET_KEY": "a-long-random-production-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz",
        "MCPHUB_DEBUG": "false",
        "SITE_URL": "https://hub.example.com",
        "ALLOWED_HOSTS": "hub.example.com",
        "MCPHUB_DATA_DIR": str(tmp_path),
        "MCPHUB_ENV_FILE": str(tmp_path / "none.env"),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout
